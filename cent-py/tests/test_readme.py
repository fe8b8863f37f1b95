"""The Python example of the README (and of cent-py/README.md) runs as written."""

import re

from conftest import REPO


def python_blocks(path):
    text = path.read_text()
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


def test_readme_examples_run(cache, monkeypatch):
    monkeypatch.setenv("CENT_CACHE", cache)
    blocks = python_blocks(REPO / "README.md") + python_blocks(REPO / "cent-py" / "README.md")
    assert len(blocks) >= 2, "the READMEs lost their Python examples"
    for block in blocks:
        scope = {}
        exec(compile(block, "README example", "exec"), scope)
        assert any(r.found for r in scope.get("results", [])), "the example explained nothing"
