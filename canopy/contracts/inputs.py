"""What the activity input models share."""

from typing import Any

from pydantic import BaseModel, model_validator


class BareValueAccepted(BaseModel):
    """An activity input of one field that also reads that field's bare value: how the
    activity was called before it took a model. An activity task scheduled, or retried,
    across an upgrade still runs."""

    @model_validator(mode="before")
    @classmethod
    def _from_bare_value(cls, data: Any) -> Any:
        if isinstance(data, str):
            (field,) = cls.model_fields
            return {field: data}
        return data
