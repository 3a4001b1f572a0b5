"""Exception types of aiter_lite. Every failure of the JIT path raises one of these."""
from __future__ import annotations


class AiterLiteError(Exception):
    """Base class of aiter_lite's own errors."""


class RegistryError(AiterLiteError, ValueError):
    """jit_config.json (or an extra registry) is invalid. The message names module, key and file."""

    def __init__(self, message: str, *, path: str = "", module: str = "", key: str = ""):
        where = ", ".join(p for p in (
            path and f"file {path}", module and f"module {module!r}", key and f"key {key!r}") if p)
        super().__init__(f"{where}: {message}" if where else message)
        self.path, self.module, self.key = path, module, key

    def __reduce__(self):
        return _rebuild_registry_error, (self.args[0], self.path, self.module, self.key)


def _rebuild_registry_error(text, path, module, key):
    err = RegistryError.__new__(RegistryError)
    Exception.__init__(err, text)
    err.path, err.module, err.key = path, module, key
    return err


class BuildError(AiterLiteError, RuntimeError):
    """A module could not be built or loaded.

    Carries the module name, the first compiler ``error:`` line (with file:line), the full build log
    path and hints. Processes waiting on the same build get an equal BuildError.
    """

    def __init__(self, module: str, message: str, *, first_error: str = "", log_path: str = "",
                 hints: tuple[str, ...] = ()):
        self.module, self.message, self.first_error = module, message, first_error
        self.log_path, self.hints = log_path, tuple(hints)
        super().__init__(self._render())

    def _render(self) -> str:
        lines = [f"building {self.module} failed: {self.message}"]
        if self.first_error:
            lines.append(f"  first error: {self.first_error}")
        if self.log_path:
            lines.append(f"  full log: {self.log_path}")
        lines += [f"  hint: {h}" for h in self.hints]
        return "\n".join(lines)

    def to_dict(self) -> dict:
        return {"module": self.module, "message": self.message, "first_error": self.first_error,
                "log_path": self.log_path, "hints": list(self.hints)}

    @classmethod
    def from_dict(cls, d: dict) -> "BuildError":
        return cls(d["module"], d["message"], first_error=d.get("first_error", ""),
                   log_path=d.get("log_path", ""), hints=tuple(d.get("hints", ())))

    def __reduce__(self):
        return BuildError.from_dict, (self.to_dict(),)


class LockTimeout(BuildError):
    """Waiting for another process's build exceeded AITER_LITE_LOCK_TIMEOUT."""
