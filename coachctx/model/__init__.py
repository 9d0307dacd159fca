"""The one adapter for every model call: the settings (`settings`, the only place that reads
them), one bounded call (`call`), the routing classifier (`classifier`) and the reply stream
(`reply`). The CLI and the playground both come through here; the engine never does — its one
model call is injected as a classifier."""

from coachctx.model.classifier import OpenAIClassifier, classifier_for, classifier_from_env
from coachctx.model.reply import MAX_REPLY_BYTES, MAX_REPLY_CHARS, ReplyError, stream_reply
from coachctx.model.settings import SETTING_KEYS, ModelSettings, model_settings

__all__ = [
    "MAX_REPLY_BYTES",
    "MAX_REPLY_CHARS",
    "SETTING_KEYS",
    "ModelSettings",
    "OpenAIClassifier",
    "ReplyError",
    "classifier_for",
    "classifier_from_env",
    "model_settings",
    "stream_reply",
]
