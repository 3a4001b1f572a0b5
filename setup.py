"""Ships jit_config.json and csrc/ inside the wheel (as aiter_lite/_data), so a non-editable install
can build its modules. The sources stay at the repository root for editable installs and CI."""
import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent


class BuildPyWithData(build_py):
    def run(self):
        super().run()
        data = Path(self.build_lib) / "aiter_lite" / "_data"
        shutil.rmtree(data, ignore_errors=True)
        data.mkdir(parents=True)
        shutil.copy2(ROOT / "jit_config.json", data / "jit_config.json")
        shutil.copytree(ROOT / "csrc", data / "csrc", ignore=shutil.ignore_patterns("*.o", "*.so", "__pycache__"))


setup(cmdclass={"build_py": BuildPyWithData})
