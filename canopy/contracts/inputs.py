"""What the activity input and result models share."""

from typing import Any

from pydantic import BaseModel, model_validator


class BareValueAccepted(BaseModel):
    """An activity's input or result model that also reads a bare value (a string, a
    list) as its first field, the others taking their defaults: what the activity took or
    returned before it had a model. An activity task scheduled across an upgrade still
    runs, and a recorded history's result still replays."""

    @model_validator(mode="before")
    @classmethod
    def _from_bare_value(cls, data: Any) -> Any:
        if isinstance(data, str | list):
            return {next(iter(cls.model_fields)): data}
        return data
