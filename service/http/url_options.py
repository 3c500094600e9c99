"""Options of a POST body given in its URL instead: `POST /v1/query?format=csv`.

GET /v1/query takes its options in the URL, so people write them there on a POST as well; a
POST used to answer JSON to `?format=csv` without a word. Now an option in the URL of a POST
works as it does in the body: the URL's value is taken when the body does not give one, and a
value given in both must be the same — otherwise 400, naming both. A URL value that does not
validate is a 400 worded as FastAPI words a bad query parameter (`query.format: ...`), so the
fast path (service/http/fastpath.py) and the route answer the same.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from starlette.datastructures import QueryParams

from warehouse.errors import UserError

Body = TypeVar("Body", bound=BaseModel)


def with_url_options(body: Body, url: QueryParams, names: Iterable[str]) -> Body:
    """`body` with the options `names` (as the body spells them) taken from `url` too.

    Raises:
        UserError: an option given twice in the URL, given in both with different values, or a
            URL value that does not validate.
    """
    given: dict[str, Any] = {}
    for name in names:
        values = url.getlist(name)
        if len(values) > 1:
            raise UserError(f"{name} is given {len(values)} times in the URL: give it once")
        if values:
            given[name] = values[0]
    if not given:
        return body
    fields = _by_alias(type(body))
    stated = body.model_dump(by_alias=True, exclude_unset=True)
    try:
        merged = type(body).model_validate({**stated, **given})
    except ValidationError as error:
        raise UserError(_worded(error, given)) from None
    for name in given:
        field = fields[name]
        if field in body.model_fields_set and getattr(body, field) != getattr(merged, field):
            raise UserError(
                f"{name} is given twice and differs: {getattr(merged, field)!r} in the URL, "
                f"{getattr(body, field)!r} in the body: give it once"
            )
    return merged


def _by_alias(model: type[BaseModel]) -> Mapping[str, str]:
    """Option name as written (its alias, if any) -> attribute name."""
    return {info.alias or name: name for name, info in model.model_fields.items()}


def _worded(error: ValidationError, given: Mapping[str, Any]) -> str:
    """The problems with the URL's values, as app._validation_error words query parameters."""
    problems = [
        f"query.{item['loc'][0]}: {item['msg']}"
        for item in error.errors()
        if item["loc"] and item["loc"][0] in given
    ]
    return "; ".join(problems) or "invalid options in the URL"
