import coachctx


def test_public_surface_is_pinned() -> None:
    assert coachctx.__all__ == [
        "FRAGMENT_NAMES", "INTENTS", "Bundle", "CoachctxError", "Decision", "FixtureUpstream", "InputError",
        "ModelAnswer", "OpenAIClassifier", "Policy", "PolicyError", "Response", "TraceError", "Upstream",
        "classifier_from_env", "fetch_bundle", "load_policy", "parse_policy", "policy_to_yaml", "route",
        "score", "select",
    ]
    for name in coachctx.__all__:
        assert hasattr(coachctx, name), name
