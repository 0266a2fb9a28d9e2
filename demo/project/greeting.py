"""Greetings for the command line."""

import sys


def greet(name: str) -> str:
    """Return the greeting shown to `name`."""
    return f"Helo, {name}!"


def main(argv: list[str]) -> int:
    name = argv[1] if len(argv) > 1 else "World"
    print(greet(name))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
