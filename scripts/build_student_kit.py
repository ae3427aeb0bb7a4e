"""Build the student kit into OUT (a new folder): `python scripts/build_student_kit.py OUT`.

Students install it with `pip install OUT` (see grader/student_kit.py for what it holds and
leaves out, and the README's "For students")."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # this checkout's grader

from grader.student_kit import build_kit  # noqa: E402


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        kit = build_kit(Path(argv[0]))
    except (FileExistsError, RuntimeError) as problem:
        print(f"build_student_kit: {problem}", file=sys.stderr)
        return 2
    print(f"{kit}: install with `pip install {kit}`")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
