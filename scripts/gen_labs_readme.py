"""Write labs/README.md, the lab catalogue, from every lab's lab.yaml (assessor/labs/catalogue_page.py).

    .venv/bin/python scripts/gen_labs_readme.py [--check]

Run it after adding a lab or changing one's title, level, exam domains or checks:
tests/labs/test_labs_readme.py fails while the page is stale. --check writes nothing and exits 1 when the
page differs from what the catalogue gives. Exit 2 when a lab is malformed (each problem is printed).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main(argv: list[str] | None = None) -> int:
    from assessor.labs.catalogue_page import markdown
    from assessor.labs.loader import default_root, load_catalogue

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when labs/README.md is stale; write nothing")
    args = parser.parse_args(argv)
    root = default_root()
    cat = load_catalogue(root)
    for err in cat.errors:
        print(f"gen_labs_readme: {err}", file=sys.stderr)
    if cat.errors:
        return 2
    page = markdown(cat.labs, root)
    target = root / "README.md"
    if args.check:
        same = target.is_file() and target.read_text(encoding="utf-8") == page
        print(f"{target}: {'up to date' if same else 'stale: run scripts/gen_labs_readme.py'}")
        return 0 if same else 1
    target.write_text(page, encoding="utf-8")
    print(f"wrote {target} ({len(cat.labs)} labs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
