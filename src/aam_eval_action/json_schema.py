"""A small JSON Schema validator for `expected.output-json-schema` (no dependency needed).

It knows the keywords an output check needs: `type`, `properties`, `required`,
`additionalProperties`, `items`, `enum`, `const`, `minItems`, `maxItems`, `minLength`,
`maxLength`, `pattern`, `minimum`, `maximum`, plus the annotations `title`, `description`
and `$schema`. A schema using any other keyword is refused when the case is loaded, so a
check can never pass because a keyword was silently ignored.
"""

from __future__ import annotations

import re
from typing import Any

TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,), "array": (list,), "string": (str,), "boolean": (bool,),
    "integer": (int,), "number": (int, float), "null": (type(None),),
}
KEYWORDS = (
    "type", "properties", "required", "additionalProperties", "items", "enum", "const",
    "minItems", "maxItems", "minLength", "maxLength", "pattern", "minimum", "maximum",
    "title", "description", "$schema",
)


def check_schema(schema: Any, where: str = "") -> str | None:
    """Why a schema is not usable here, or None."""
    if not isinstance(schema, dict):
        return f"{where or 'schema'}: a schema must be a mapping"
    unknown = sorted(set(schema) - set(KEYWORDS))
    if unknown:
        return (f"{where or 'schema'}: unsupported keyword {unknown[0]!r}; "
                f"use only: {', '.join(KEYWORDS)}")
    kinds = schema.get("type", [])
    for kind in kinds if isinstance(kinds, list) else [kinds]:
        if kind not in TYPES:
            return f"{where or 'schema'}: unknown type {kind!r}; use one of: {', '.join(TYPES)}"
    if "pattern" in schema:
        try:
            re.compile(str(schema["pattern"]))
        except re.error as exc:
            return f"{where or 'schema'}: pattern is not a valid regular expression ({exc})"
    for name, sub in (schema.get("properties") or {}).items():
        problem = check_schema(sub, f"{where}properties.{name}.")
        if problem:
            return problem
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), dict):
            problem = check_schema(schema[key], f"{where}{key}.")
            if problem:
                return problem
    return None


def errors(value: Any, schema: dict[str, Any], path: str = "$") -> list[str]:
    """Every way `value` fails `schema`, as `$.path: problem` lines (empty when it conforms)."""
    kinds = schema.get("type")
    if kinds is not None and not _is_type(value, kinds):
        return [f"{path}: expected {kinds}, got {_type_name(value)}"]
    found: list[str] = []
    if "enum" in schema and value not in schema["enum"]:
        found.append(f"{path}: {value!r} is not one of {schema['enum']}")
    if "const" in schema and value != schema["const"]:
        found.append(f"{path}: {value!r} is not {schema['const']!r}")
    if isinstance(value, dict):
        found += _object_errors(value, schema, path)
    elif isinstance(value, list):
        found += _array_errors(value, schema, path)
    elif isinstance(value, str):
        found += _string_errors(value, schema, path)
    elif isinstance(value, int | float) and not isinstance(value, bool):
        found += _number_errors(value, schema, path)
    return found


def _object_errors(value: dict[str, Any], schema: dict[str, Any], path: str) -> list[str]:
    props = schema.get("properties") or {}
    found = [f"{path}: missing required property {k!r}" for k in schema.get("required", []) if k not in value]
    extra = schema.get("additionalProperties", True)
    for key, item in value.items():
        if key in props:
            found += errors(item, props[key], f"{path}.{key}")
        elif extra is False:
            found.append(f"{path}: unexpected property {key!r}")
        elif isinstance(extra, dict):
            found += errors(item, extra, f"{path}.{key}")
    return found


def _array_errors(value: list[Any], schema: dict[str, Any], path: str) -> list[str]:
    found = []
    if len(value) < schema.get("minItems", 0):
        found.append(f"{path}: fewer than {schema['minItems']} items")
    if "maxItems" in schema and len(value) > schema["maxItems"]:
        found.append(f"{path}: more than {schema['maxItems']} items")
    if isinstance(schema.get("items"), dict):
        for i, item in enumerate(value):
            found += errors(item, schema["items"], f"{path}[{i}]")
    return found


def _string_errors(value: str, schema: dict[str, Any], path: str) -> list[str]:
    found = []
    if len(value) < schema.get("minLength", 0):
        found.append(f"{path}: shorter than {schema['minLength']} characters")
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        found.append(f"{path}: longer than {schema['maxLength']} characters")
    if "pattern" in schema and not re.search(schema["pattern"], value):
        found.append(f"{path}: does not match /{schema['pattern']}/")
    return found


def _number_errors(value: float, schema: dict[str, Any], path: str) -> list[str]:
    found = []
    if "minimum" in schema and value < schema["minimum"]:
        found.append(f"{path}: {value} is below the minimum {schema['minimum']}")
    if "maximum" in schema and value > schema["maximum"]:
        found.append(f"{path}: {value} is above the maximum {schema['maximum']}")
    return found


def _is_type(value: Any, kinds: str | list[str]) -> bool:
    for kind in kinds if isinstance(kinds, list) else [kinds]:
        if kind in ("integer", "number") and isinstance(value, bool):
            continue
        if kind == "integer" and isinstance(value, float) and value.is_integer():
            return True
        if isinstance(value, TYPES.get(kind, ())):
            return True
    return False


def _type_name(value: Any) -> str:
    return {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}.get(
        type(value), "number")
