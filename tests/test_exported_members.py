from types import ModuleType

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


def test_all_is_exactly_the_public_names_of_the_package() -> None:
    """Nothing public beyond `__all__` (submodules aside): a name imported into the package for
    its own use would otherwise become surface nobody chose."""
    public = sorted(name for name, value in vars(coachctx).items()
                    if not name.startswith("_") and not isinstance(value, ModuleType))
    assert sorted(coachctx.__all__) == public
    assert len(coachctx.__all__) == len(set(coachctx.__all__))
