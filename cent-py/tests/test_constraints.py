"""Constraint arguments are respected."""



def test_immutable_never_changes(adult, refused):
    fixed = ["education-num", "occupation", "capital-gain"]
    # Without the constraint these features are levers for these people.
    assert any(set(fixed) & set(r.changes) for p in refused for r in adult.explain(p, n=3) if r.found)
    for person in refused:
        for r in adult.explain(person, n=3, immutable=fixed):
            if r.found:
                assert not set(fixed) & set(r.changes), r
                values = dict(zip(adult.features, r.values))
                for f in fixed:
                    assert values[f] == str(person[f])


def test_increase_only_never_decreases(adult, refused):
    seen = 0
    for person in refused:
        for r in adult.explain(person, n=3, increase_only=["hours-per-week", "capital-loss"], immutable=["capital-gain"]):
            if not r.found:
                continue
            for f in ("hours-per-week", "capital-loss"):
                if f in r.changes:
                    before, after = r.changes[f]
                    assert float(after) > float(before), r
                    seen += 1
    assert seen > 0, "no answer moved an increase-only feature: the test checks nothing"


def test_decrease_only_and_cost(adult, refused):
    person = refused[0]
    base = adult.explain(person, n=3)
    levers = {f for r in base for f in r.changes}
    costly = {f: 50.0 for f in levers}
    for r in adult.explain(person, n=3, cost=costly):
        assert r.found
    for r in adult.explain(person, n=3, decrease_only=["hours-per-week"]):
        if r.found and "hours-per-week" in r.changes:
            before, after = r.changes["hours-per-week"]
            assert float(after) < float(before)


def test_options_change_answers_as_asked(adult, refused):
    person = refused[1]
    assert len(adult.explain(person, n=1)) == 1
    for r in adult.explain(person, n=2, min_probability=0.8):
        assert not r.found or r.probability >= 0.8
