"""The mutation score of one package after `mutmut run`: its last line is
`mutation score: K/N killed`. N counts every mutant of the package that mutmut made, so a mutant
no test reaches, or one left unchecked, counts as not killed; a timeout counts as killed, as
mutmut scores it. The mutants that survived are listed first, for the next test to write."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter


def main(prefix: str) -> int:
    out = subprocess.run(
        [sys.executable, "-m", "mutmut", "results", "--all", "true"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    status: dict[str, str] = {}
    for line in out.splitlines():
        name, sep, verdict = line.strip().rpartition(": ")
        if sep and name.startswith(prefix + "."):
            status[name] = verdict
    counts = Counter(status.values())
    for name, verdict in sorted(status.items()):
        if verdict not in ("killed", "timeout"):
            print(f"{verdict}: {name}")
    print(", ".join(f"{n} {verdict}" for verdict, n in sorted(counts.items())))
    killed = counts["killed"] + counts["timeout"]
    print(f"mutation score: {killed}/{len(status)} killed")
    return 0 if status else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
