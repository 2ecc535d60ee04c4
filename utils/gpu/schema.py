"""Validation of measurement records against utils/gpu/schema.json: the subset of JSON Schema the
schema uses, checked with the standard library only (the GPU machines have no jsonschema), then the
arithmetic that ties a record's fields together. utils.measure validates every record before writing
it, and re-exports `validate`, `errors`, `schema` and SchemaError.

Chapters: none directly (used by utils.gpu.harness).
"""
from __future__ import annotations

import json
import math
import re
import statistics
from pathlib import Path

SCHEMA_PATH = Path(__file__).with_name("schema.json")


class SchemaError(ValueError):
    pass


_TYPES = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None)}


def _type_ok(value, t: str) -> bool:
    if t == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if t == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    return isinstance(value, _TYPES[t])


def _check(value, schema: dict, root: dict, path: str, errors: list):
    if "$ref" in schema:
        ref = schema["$ref"]
        node = root
        for part in ref.lstrip("#/").split("/"):
            node = node[part]
        return _check(value, node, root, path, errors)
    if "type" in schema:
        types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(_type_ok(value, t) for t in types):
            errors.append(f"{path}: expected {' or '.join(types)}, got {type(value).__name__}")
            return
    if "enum" in schema and not any(value == e and type(value) is type(e) for e in schema["enum"]):
        errors.append(f"{path}: {value!r} is not one of {schema['enum']}")
    if isinstance(value, str):
        if len(value) < schema.get("minLength", 0):
            errors.append(f"{path}: empty")
        if "pattern" in schema and not re.search(schema["pattern"], value):
            errors.append(f"{path}: {value!r} does not match {schema['pattern']}")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            errors.append(f"{path}: {value} < {schema['minimum']}")
        if "exclusiveMinimum" in schema and value <= schema["exclusiveMinimum"]:
            errors.append(f"{path}: {value} <= {schema['exclusiveMinimum']}")
    if isinstance(value, list):
        if len(value) < schema.get("minItems", 0):
            errors.append(f"{path}: fewer than {schema['minItems']} items")
        if "items" in schema:
            for i, item in enumerate(value):
                _check(item, schema["items"], root, f"{path}[{i}]", errors)
    if isinstance(value, dict):
        if len(value) < schema.get("minProperties", 0):
            errors.append(f"{path}: fewer than {schema['minProperties']} fields")
        for key in schema.get("required", []):
            if key not in value:
                errors.append(f"{path}: missing field {key!r}")
        props = schema.get("properties", {})
        extra = schema.get("additionalProperties", True)
        for key, item in value.items():
            if key in props:
                _check(item, props[key], root, f"{path}.{key}", errors)
            elif extra is False:
                errors.append(f"{path}: unknown field {key!r}")
            elif isinstance(extra, dict):
                _check(item, extra, root, f"{path}.{key}", errors)


_SCHEMA_CACHE: list = []


def schema() -> dict:
    if not _SCHEMA_CACHE:
        _SCHEMA_CACHE.append(json.loads(SCHEMA_PATH.read_text()))
    return _SCHEMA_CACHE[0]


def errors(record) -> list[str]:
    """Everything wrong with a record: the schema, then the arithmetic that ties its fields together
    (each median is its samples' median, each rate its counts over the median, the headline exists)."""
    errs: list[str] = []
    _check(record, schema(), schema(), "record", errs)
    if errs:
        return errs
    for i, r in enumerate(record["results"]):
        where = f"record.results[{i}]"
        if not math.isclose(r["median_s"], statistics.median(r["samples_s"]), rel_tol=1e-9):
            errs.append(f"{where}: median_s is not the median of samples_s")
        for field, count in (("bandwidth", "bytes"), ("flop_rate", "flops")):
            if not math.isclose(r[field], r[count] / r["median_s"], rel_tol=1e-9):
                errs.append(f"{where}: {field} is not {count} / median_s")
    if record["headline"] not in record["metrics"]:
        errs.append(f"record.headline: {record['headline']!r} is not one of the metrics")
    if record["mode"] != "tiny" and record["method"]["timer"] == "fake":
        errs.append("record.method.timer: a fake timer can only write a 'tiny' record")
    return errs


def validate(record) -> None:
    """Raise SchemaError, listing every problem, unless `record` is a valid measurement record."""
    errs = errors(record)
    if errs:
        raise SchemaError(f"invalid measurement record ({len(errs)} problems): " + "; ".join(errs))
