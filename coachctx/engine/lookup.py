"""Policy lookup and excludes: the first plan from the routed intent, its contenders and the
other intents the question has evidence for.

- Certain routing (one contender): the intent's lists apply as written.
- Uncertain routing: primaries are the union of the contenders' primaries, secondaries the union
  of their secondaries.
- Evidence beats exclusion, on every route: an intent that scored above zero but is no contender
  contributes its primaries, spent first in the budget order (`evidence_in_question`), and no
  exclude withholds a fragment an intent with evidence holds as primary (`kept_despite_exclude`).
- A clinical question always carries `readiness_injury` as a primary (`clinical_question`), and
  there the primaries of intents with evidence are primaries too: what a question with pain in it
  has evidence for is never cut by the budget ("stress fracture, plan for the race?" keeps the
  training readiness even when a third intent's evidence would have taken its tokens).
- A fragment the question names through the policy's `fragment_terms` ("deadlift" names
  `baseline_strength`) is a secondary spent before the route's own (`evidence_in_question`), and no
  exclude withholds it: the question asked about that very fact.
- A question the policy cannot read (`unread_words_in`: most of its words are in no language the
  policy knows) carries `readiness_injury` as a primary too (`unread_question`): it may be about pain
  in words no term is written in.
- A question that matched no term and got no model label sees the policy's `unmatched` set. One
  that matched no term and got a model label sees that intent's lists, and `readiness_injury` as a
  primary when the unmatched set holds it (`unmatched_question`): the label is a guess about a
  question the rules could not read, and a model (or an instruction typed into the question) must
  not take away what the question would have carried without one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from coachctx.engine.plan import FragmentState, Plan, Reason
from coachctx.engine.policy import Policy
from coachctx.engine.routing import Route

CLINICAL_FRAGMENT = "readiness_injury"
"""What a question that sounds clinical always carries when the service supplied it."""
UNREAD_SHOWN = 6
"""The unread words an `unread_question` reason names; the rest are "..."."""

Evidence = Mapping[str, Sequence[tuple[str, float]]]
"""Intent -> the terms it matched in the question, for every intent that scored above zero."""

Named = Mapping[str, Sequence[str]]
"""Fragment -> the policy's fragment terms the question used for it."""


def evidence_of(decided: Route) -> dict[str, tuple[tuple[str, float], ...]]:
    """Every intent that scored above zero, best first, with the terms it matched."""
    return {name: decided.scores.matched[name] for name, value in decided.scores.ranked() if value > 0}


def _union(lists: Sequence[Sequence[str]]) -> list[str]:
    out: list[str] = []
    for items in lists:
        out.extend(i for i in items if i not in out)
    return out


def _terms(matched: Sequence[tuple[str, float]]) -> str:
    return ", ".join(f"{t} {w:g}" for t, w in matched) or "no terms"


def lookup(policy: Policy, intent: str, contenders: Sequence[str], *, soften_excludes: bool = True,
           evidence: Evidence | None = None, clinical: Sequence[str] = (), unmatched: bool = False,
           named: Named | None = None, unread: Sequence[str] = (), guessed: str | None = None) -> Plan:
    """The plan the policy asks for. `contenders` includes `intent` (first) when uncertain;
    `evidence` holds the matched terms of every intent that scored; `clinical` the clinical terms
    the question matched; `named` the fragments its fragment terms name; `unread` the words of a
    question the policy cannot read; `guessed` the model's label of a question no term matched.
    `soften_excludes=False` reproduces the original design (the
    routed intent's lists alone, excludes always applied) so the audit can show what it lost. The intents whose lists were read go on the plan
    (`Plan.considered`)."""
    named = (named or {}) if soften_excludes else {}
    evidence = evidence or {}
    ordered = [intent, *[c for c in contenders if c != intent]] if soften_excludes else [intent]
    considered = [*ordered, *[e for e in evidence if e not in ordered]] if soften_excludes else ordered
    if unmatched and soften_excludes and policy.unmatched is not None:
        return _unmatched_plan(policy, clinical, named, unread).noted(considered=considered)
    intents = [policy.intent(name) for name in ordered]
    primary = _union([i.primary for i in intents])
    extra = [name for name in evidence if name not in ordered and evidence[name]] if soften_excludes else []
    from_evidence: dict[str, str] = {}
    for name in extra:
        for fragment in policy.intent(name).primary:
            if fragment not in primary:
                from_evidence.setdefault(fragment, name)
    is_clinical = bool(clinical) and soften_excludes
    injury = _injury_reason(clinical, unread, _guess(policy, guessed)) if soften_excludes else None
    if injury is not None and CLINICAL_FRAGMENT not in primary:
        primary.append(CLINICAL_FRAGMENT)
        from_evidence.pop(CLINICAL_FRAGMENT, None)
    if is_clinical:
        primary += [f for f in from_evidence if f not in primary]
    asked = [f for f in named if f not in primary]
    secondary = [f for f in _union([list(from_evidence), asked, *[i.secondary for i in intents]])
                 if f not in primary]
    plan = Plan.initial(primary, secondary)
    holders = {name: policy.intent(name) for name in [*ordered, *extra]}
    changes: dict[str, FragmentState] = {}
    for state in plan.fragments:
        excluded_by = [n for n in ordered if state.name in policy.intent(n).exclude]
        if state.role == "none":
            changes[state.name] = state.withhold(_not_asked(excluded_by, ordered))
            continue
        if state.name in from_evidence:
            who = from_evidence[state.name]
            then = ("; the question sounds clinical, so the budget does not cut it" if is_clinical
                    else ", so it is spent before generic secondaries")
            state = state.note(Reason(
                "evidence_in_question", f"{who} has evidence in the question ({_terms(evidence[who])}) and "
                                        f"holds it as primary{then}"))
        elif state.name in asked:
            state = state.note(_named_reason(state.name, named))
        if injury is not None and state.name == CLINICAL_FRAGMENT:
            state = state.note(injury)
        if excluded_by:
            state = state.note(Reason("kept_despite_exclude", _why_kept(state.name, excluded_by, ordered,
                                                                        holders, evidence, injury, named)))
        changes[state.name] = state
    return plan.update(changes).noted(considered=considered)


def _not_asked(excluded_by: Sequence[str], ordered: Sequence[str]) -> Reason:
    """Why a fragment no intent read asks for is withheld."""
    if excluded_by and len(ordered) > 1:
        return Reason("excluded", f"{_names(excluded_by)} excludes it and no contender ({_names(ordered)}) asks for it")
    if excluded_by:
        return Reason("excluded", f"the {excluded_by[0]} intent excludes it")
    return Reason("not_requested", f"{_names(ordered)} neither asks for nor excludes it")


def _why_kept(fragment: str, excluded_by: Sequence[str], ordered: Sequence[str],
              holders: Mapping[str, object], evidence: Evidence, injury: Reason | None, named: Named) -> str:
    needed_by = [n for n in ordered if holders[n].requests(fragment)]  # type: ignore[attr-defined]
    if needed_by:
        return (f"{_names(excluded_by)} excludes it, but routing is uncertain and {_names(needed_by)} needs it "
                f"as {holders[needed_by[0]].requests(fragment)}")  # type: ignore[attr-defined]
    with_evidence = [n for n in holders if n not in ordered and fragment in holders[n].primary]  # type: ignore[attr-defined]
    if with_evidence:
        who = with_evidence[0]
        return (f"{_names(excluded_by)} excludes it, but {who} has evidence in the question "
                f"({_terms(evidence[who])}) and holds it as primary")
    if fragment in named:
        return f"{_names(excluded_by)} excludes it, but the question names it ({', '.join(named[fragment])})"
    assert injury is not None, fragment  # only readiness_injury is kept for what the question is
    return f"{_names(excluded_by)} excludes it, but {_WHY_KEPT[injury.code]}"


_WHY_KEPT = {"clinical_question": "the question sounds clinical",
             "unread_question": "the policy cannot read most of the question",
             "unmatched_question": "no term matched, so the model's label is a guess"}


def _named_reason(fragment: str, named: Named) -> Reason:
    return Reason("evidence_in_question", f"the question names it ({', '.join(named[fragment])}), so it is "
                                          f"spent before generic secondaries")


def _guess(policy: Policy, label: str | None) -> str | None:
    """The model's label of a question no term matched, when the policy's unmatched set (what the
    question would have seen without a model) holds `readiness_injury`."""
    lists = policy.unmatched
    if label is None or lists is None or CLINICAL_FRAGMENT not in (*lists.primary, *lists.secondary):
        return None
    return label


def _injury_reason(clinical: Sequence[str], unread: Sequence[str], guessed: str | None = None) -> Reason | None:
    """Why the question carries `readiness_injury` whatever it routed to: it sounds clinical, the
    policy cannot read most of it, or no term matched and a model guessed its intent. None when
    none of these."""
    if clinical:
        return Reason("clinical_question", f"the question sounds clinical ({', '.join(clinical)}): "
                                           f"{CLINICAL_FRAGMENT} always goes in when the service supplied it")
    if unread:
        shown = ", ".join(unread[:UNREAD_SHOWN]) + (", ..." if len(unread) > UNREAD_SHOWN else "")
        return Reason("unread_question", f"most of the question's words ({shown}) are in no language the policy "
                                         f"reads, so it may be about pain: {CLINICAL_FRAGMENT} goes in when the "
                                         f"service supplied it")
    if guessed is not None:
        return Reason("unmatched_question", f"no term matched, so the model's label ({guessed}) is a guess: "
                                            f"{CLINICAL_FRAGMENT}, which the policy's unmatched set holds for such "
                                            f"questions, goes in when the service supplied it")
    return None


def _unmatched_plan(policy: Policy, clinical: Sequence[str], named: Named, unread: Sequence[str]) -> Plan:
    lists = policy.unmatched
    assert lists is not None
    primary: list[str] = list(lists.primary)
    if (clinical or unread) and CLINICAL_FRAGMENT not in primary:
        primary.append(CLINICAL_FRAGMENT)
    asked = [f for f in named if f not in primary]
    plan = Plan.initial(primary, _union([asked, [f for f in lists.secondary if f not in primary]]))
    changes = {s.name: s.withhold(Reason("not_requested", "no term matched and the policy's unmatched set "
                                                          "does not ask for it"))
               for s in plan.fragments if s.role == "none"}
    changes.update({f: plan[f].note(_named_reason(f, named)) for f in asked})
    injury = _injury_reason(clinical, unread)
    if injury is not None and CLINICAL_FRAGMENT not in lists.primary:
        changes[CLINICAL_FRAGMENT] = plan[CLINICAL_FRAGMENT].note(injury)
    return plan.update(changes)


def _names(names: Sequence[str]) -> str:
    return " and ".join(names) if len(names) <= 2 else ", ".join(names[:-1]) + " and " + names[-1]
