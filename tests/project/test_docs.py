"""The documents tell the truth about the repository: every path they cite exists, every link resolves,
and REFERENCES.md lists every reference number and Xid of the data files with the values those files hold.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from assessor.data import load_data

ROOT = Path(__file__).resolve().parents[2]
DOCS = sorted((ROOT / "docs").glob("*.md"))
README = ROOT / "README.md"
REFERENCES_MD = ROOT / "docs" / "REFERENCES.md"

# The folders whose paths the documents cite and a reader will look for in the checkout.
CITED = ("assessor/", "labs/", "profiles/", "playbooks/", "reports/", "tests/")
# A placeholder (labs/<domain>/<id>/, reports/*.yaml, test_{x}.py) stands for many paths, not one.
PLACEHOLDER = re.compile(r"[<>*{}$]|\.\.\.|…")
# Only an installed wheel has these: pyproject.toml force-includes the content folders there.
WHEEL_ONLY = ("assessor/_data/",)
FENCE = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)
SPAN = re.compile(r"`([^`\n]+)`")
LINK = re.compile(r"\]\(([^)\s]+)\)")


def documents() -> list[Path]:
    return [*DOCS, README]


def prose(text: str) -> str:
    """The text outside fenced code blocks (commands and YAML examples are not citations)."""
    return FENCE.sub("", text)


def cited_paths(text: str) -> list[str]:
    """Repository paths cited in inline code, placeholders and wheel-only paths left out."""
    out = []
    for span in SPAN.findall(prose(text)):
        for token in span.split():
            token = token.strip("()[],;:.'\"").split("::")[0]
            if not token.startswith(CITED) or PLACEHOLDER.search(token) or token.startswith(WHEEL_ONLY):
                continue
            out.append(token)
    return out


def test_the_path_extractor_finds_citations_and_leaves_placeholders_and_code_blocks_out() -> None:
    text = (
        "See `assessor/capture/sources.py`, the tests in `tests/checks/test_<area>.py` and `reports/*.yaml`;\n"
        "run `pytest tests/project/test_docs.py::test_x` or `gpulab lab show mig-301`.\n"
        "```sh\ncat labs/not/a/citation.yaml\n```\n"
        "The wheel has `assessor/_data/labs`; `labs/levels.yaml`.\n"
    )
    assert cited_paths(text) == ["assessor/capture/sources.py", "tests/project/test_docs.py", "labs/levels.yaml"]


def test_the_documents_cite_the_tables_the_architecture_names() -> None:
    cited = set(cited_paths((ROOT / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")))
    for table in (
        "assessor/capture/sources.py",
        "assessor/parsers/__init__.py",
        "assessor/targets/__init__.py",
        "assessor/data/references.yaml",
        "assessor/data/xids.yaml",
        "assessor/checks/base.py",
        "assessor/capture/run.py",
        "assessor/capture/nvml.py",
        "assessor/sim/mock_nvml.py",
    ):
        assert table in cited, table


@pytest.mark.parametrize("doc", documents(), ids=lambda p: p.name)
def test_every_repository_path_a_document_cites_exists(doc: Path) -> None:
    missing = sorted({p for p in cited_paths(doc.read_text(encoding="utf-8")) if not (ROOT / p).exists()})
    assert not missing, f"{doc.relative_to(ROOT)} cites paths that do not exist: {missing}"


def anchor(heading: str) -> str:
    """GitHub's anchor for a Markdown heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


@pytest.mark.parametrize("doc", documents(), ids=lambda p: p.name)
def test_every_relative_link_in_a_document_resolves(doc: Path) -> None:
    broken = []
    for target in LINK.findall(prose(doc.read_text(encoding="utf-8"))):
        if re.match(r"[a-z]+:", target):  # https:, mailto:
            continue
        file, _, fragment = target.partition("#")
        path = (doc.parent / file).resolve() if file else doc
        if not path.exists():
            broken.append(target)
        elif fragment and path.suffix == ".md":
            headings = re.findall(r"^#+ (.+)$", prose(path.read_text(encoding="utf-8")), re.M)
            if fragment not in {anchor(h) for h in headings}:
                broken.append(target)
    assert not broken, f"{doc.relative_to(ROOT)}: broken links {broken}"


def test_the_readme_developing_section_links_every_document() -> None:
    section = README.read_text(encoding="utf-8").split("## Developing", 1)[1]
    linked = set(re.findall(r"\]\(docs/([^)#]+)\)", section))
    assert {p.name for p in DOCS} <= linked


def reference_rows() -> dict[str, str]:
    """Each table row of REFERENCES.md that starts with a reference name in backticks, by that name."""
    rows = {}
    for line in REFERENCES_MD.read_text(encoding="utf-8").splitlines():
        match = re.match(r"\| `([a-z0-9_]+)` \|", line)
        if match:
            rows[match.group(1)] = line
    return rows


REFERENCES = load_data("references.yaml")


@pytest.mark.parametrize("name", list(REFERENCES))
def test_references_md_lists_every_reference_with_the_value_the_data_file_holds(name: str) -> None:
    rows = reference_rows()
    assert name in rows, f"{name} (assessor/data/references.yaml) has no row in docs/REFERENCES.md"
    cells = [c.strip() for c in rows[name].strip("|").split("|")]
    entry = REFERENCES[name]
    if "families" in entry:
        values = [str(f["value"]) for f in entry["families"].values()]
    elif isinstance(entry["value"], list):
        values = [f"`{v}`" for v in entry["value"]]
    else:
        values = [str(entry["value"])]
    for value in values:
        assert any(value in c for c in cells[1:]), f"{name}: value {value} missing from its row: {rows[name]}"


def test_references_md_gives_every_name_a_profile_can_write_with_its_value_and_source() -> None:
    from assessor.checks import references

    text = REFERENCES_MD.read_text(encoding="utf-8")
    for name in references.names():
        if "." not in name:
            assert f"| `{name}` |" in text, name  # a single value: its row (values checked above)
            continue
        row = next((line for line in text.splitlines() if line.startswith(f"| `ref:{name}` |")), None)
        assert row is not None, f"ref:{name} has no row in docs/REFERENCES.md"
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert cells[1] == str(references.resolve(f"ref:{name}")), row
        assert cells[3] == references.source(f"ref:{name}"), row


def test_references_md_family_columns_are_in_the_order_the_data_file_gives() -> None:
    header = next(line for line in REFERENCES_MD.read_text(encoding="utf-8").splitlines() if "| A100 |" in line)
    columns = [c.strip() for c in header.strip("|").split("|")]
    rows = reference_rows()
    for name, entry in REFERENCES.items():
        if "families" not in entry:
            continue
        cells = [c.strip() for c in rows[name].strip("|").split("|")]
        for family, row in entry["families"].items():
            assert cells[columns.index(family)] == str(row["value"]), (name, family)


def xid_table(title: str) -> set[int]:
    text = REFERENCES_MD.read_text(encoding="utf-8")
    section = text.split(f"### {title}", 1)[1].split("\n#", 1)[0]
    return {int(m) for m in re.findall(r"^\| (\d+) \|", section, re.M)}


def test_references_md_xid_tables_match_the_policy() -> None:
    policy = load_data("xids.yaml")["policy"]
    assert xid_table("Critical (fail)") == set(policy["critical"])
    assert xid_table("Warn") == set(policy["warn"])
