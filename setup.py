"""Bundles the workflow (Snakefile, workflow/, scripts/, config/, profiles/) into the package.

`mintdim build` must work from any directory once installed, so a wheel
carries the workflow as mintdim/_workflow/. An editable install uses the
checkout itself (mintdim.paths falls back to the repository root).
"""

import os
import shutil

from setuptools import setup
from setuptools.command.build_py import build_py

WORKFLOW_PARTS = ["Snakefile", "workflow", "scripts", "config", "profiles"]


class BuildPyWithWorkflow(build_py):
    def run(self):
        super().run()
        here = os.path.dirname(os.path.abspath(__file__))
        target = os.path.join(self.build_lib, "mintdim", "_workflow")
        shutil.rmtree(target, ignore_errors=True)
        os.makedirs(target)
        for part in WORKFLOW_PARTS:
            src = os.path.join(here, part)
            dst = os.path.join(target, part)
            if os.path.isdir(src):
                shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__"))
            else:
                shutil.copy2(src, dst)


setup(cmdclass={"build_py": BuildPyWithWorkflow})
