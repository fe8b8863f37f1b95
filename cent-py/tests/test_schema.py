"""`cent.draft_schema`: a first schema for a CSV of one's own, the same as `cent schema` writes,
read as it is by an Explainer."""

import subprocess

import pytest

import cent


def loans(path, rows=400):
    lines = ["income,debt,age,job,approved"]
    for i in range(rows):
        income, debt, age = 15 + (i * 37) % 120, (i * 11) % 60, 20 + (i * 7) % 50
        job = ["clerk", "nurse", "driver", "engineer"][i % 4]
        ok = "yes" if income - debt + (25 if job == "engineer" else 0) > 45 else "no"
        lines.append(f"{income},{debt},{age},{job},{ok}")
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_drafted_schema_builds_an_explainer(tmp_path):
    csv = loans(tmp_path / "loans.csv")
    out = tmp_path / "schemas" / "loans.toml"
    out.parent.mkdir()
    text = cent.draft_schema(csv, "approved", favourable="yes", out=out)
    assert out.read_text() == text
    assert 'file = "../loans.csv"' in text
    assert 'name = "age"\n# Whole numbers' in text and 'mutability = "immutable"' in text
    explainer = cent.Explainer(schema=out, model="lr", cache=tmp_path / "cache")
    answer = explainer.explain({"income": 30, "debt": 40, "age": 35, "job": "clerk"}, n=1)
    assert answer[0].found, answer[0]
    assert "age" not in answer[0].changes


def test_the_favourable_outcome_is_asked_for_not_guessed(tmp_path):
    csv = loans(tmp_path / "loans.csv")
    for favourable in (None, "Yes"):
        with pytest.raises(cent.CentError) as info:
            cent.draft_schema(csv, "approved", favourable=favourable)
        assert "`no`, `yes`" in str(info.value)
    with pytest.raises(cent.CentError) as info:
        cent.draft_schema(csv, "approve", favourable="yes")
    assert "no column `approve`" in str(info.value) and "`approved`" in str(info.value)


def test_the_same_draft_as_the_cli(tmp_path, cent_bin):
    csv = loans(tmp_path / "loans.csv")
    text = cent.draft_schema(csv, "approved", favourable="yes", out=tmp_path / "py.toml")
    cli = tmp_path / "cli.toml"
    cmd = [cent_bin, "schema", "--data", str(csv), "--target", "approved", "--favourable", "yes", "--out", str(cli), "-q"]
    subprocess.run(cmd, check=True, timeout=120)
    assert cli.read_text() == text
