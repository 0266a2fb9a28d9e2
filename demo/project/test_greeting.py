"""Run with: python3 test_greeting.py"""

from greeting import greet


def test_greet() -> None:
    assert greet("World") == "Hello, World!", greet("World")


if __name__ == "__main__":
    test_greet()
    print("ok: test_greeting")
