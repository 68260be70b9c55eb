"""The entry point of every minikafka process (the `minikafka` tool, `python -m minikafka.launcher ROLE` nodes).

kio imports hypothesis whenever it is installed, to give its protocol types strategies for property tests. No
minikafka process uses them, and a development install has hypothesis: each node and tool would pay 0.16 CPU s
(a fifth of a broker's imports) for it. So the process is started with hypothesis hidden, before kio is imported.
"""

from __future__ import annotations

import sys


def main() -> int:
    if "hypothesis" not in sys.modules:
        sys.modules["hypothesis"] = None  # type: ignore[assignment]  # None makes `import hypothesis` fail
    from minikafka.cli import main as cli_main

    return cli_main()


if __name__ == "__main__":
    sys.exit(main())
