"""The pydantic base every model uses: camelCase field names as users write them, strict types,
immutable values."""

# No `from __future__ import annotations` here: pydantic would then compile and evaluate every
# field's annotation string when the class is made (about 15 ms of `probesim run`'s start-up).
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, Strict
from pydantic.alias_generators import to_camel

INT32_MAX = 2**31 - 1

SInt = Annotated[int, Strict()]
SBool = Annotated[bool, Strict()]
SFloat = Annotated[float, Strict()]
Int32 = Annotated[int, Strict(), Field(ge=-(2**31), le=INT32_MAX)]
NonNegInt32 = Annotated[int, Strict(), Field(ge=0, le=INT32_MAX)]


class Model(BaseModel):
    """Frozen, camelCase, unknown fields are an error. Scalars are strict where declared with
    the S*/Int32 types (a string is not a number, as for the API server); lists become tuples."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=False,
        frozen=True,
        extra="forbid",
    )


class OpenModel(Model):
    """For Kubernetes objects whose many fields probesim does not model: unknown ones are kept
    aside (the manifest loader checks them against the real field list)."""

    model_config = ConfigDict(extra="ignore")
