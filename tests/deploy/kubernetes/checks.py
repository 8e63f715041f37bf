"""The ok:/FAIL: reporting shared by check_manifests.py and check_kustomize.py."""


class Checks:
    """check(what, cond, detail) prints "ok: what" or "FAIL: what: detail" and counts failures."""

    def __init__(self):
        self.failures = 0

    def __call__(self, what, cond, detail=""):
        if cond:
            print(f"ok: {what}")
        else:
            self.failures += 1
            print(f"FAIL: {what}{': ' + detail if detail else ''}")

    def finish(self, done_message):
        """Prints the summary; returns the exit status (1 when any check failed)."""
        print(f"{self.failures} check(s) failed" if self.failures else done_message)
        return 1 if self.failures else 0
