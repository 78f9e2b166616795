"""The one cattrs converter that structures composition entries and plugin configs.

Strict: no coercion between YAML types, unknown keys forbidden, every failure kept.
"""

from __future__ import annotations

import enum
import types
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, Union, get_args, get_origin

import attrs
import cattrs
from cattrs.cols import (
    homogenous_tuple_structure_factory,
    list_structure_factory,
    mapping_structure_factory,
)
from cattrs.gen import make_dict_structure_fn

from ..vocab import ApprovalPolicy, Network, SandboxMode
from .types import CHECKS, ValueProblem, WrongType, describe, strict_str

Hook = Callable[[Any, Any], Any]


def make_converter() -> cattrs.Converter:
    """A fresh converter (built per load: no module-level state, and it is cheap)."""
    converter = cattrs.Converter(forbid_extra_keys=True, detailed_validation=True)
    for checked_type, check in CHECKS.items():
        converter.register_structure_hook(checked_type, _simple(check))
    converter.register_structure_hook(SandboxMode, _simple(_sandbox_mode))
    converter.register_structure_hook(ApprovalPolicy, _simple(_approval_policy))
    converter.register_structure_hook(Network, _simple(_network))
    # Exact-type hooks (above) outrank these predicate factories in cattrs' dispatch.
    converter.register_structure_hook_factory(_is_enum, _enum_factory)
    converter.register_structure_hook_factory(_is_literal, _literal_factory)
    converter.register_structure_hook_factory(_is_optional, _optional_factory(converter))
    converter.register_structure_hook_factory(_is_sequence, _sequence_factory(converter))
    converter.register_structure_hook_factory(_is_mapping, _mapping_factory(converter))
    converter.register_structure_hook_factory(attrs.has, _attrs_factory(converter))
    return converter


def _simple(check: Callable[[object], Any]) -> Hook:
    return lambda value, _type: check(value)


def _sandbox_mode(value: object) -> SandboxMode:
    return SandboxMode.parse(strict_str(value))


def _approval_policy(value: object) -> ApprovalPolicy:
    return ApprovalPolicy.parse(strict_str(value))


def _network(value: object) -> Network:
    return Network.parse(strict_str(value))


def _is_enum(type_: Any) -> bool:
    return isinstance(type_, type) and issubclass(type_, enum.Enum)


def _enum_factory(type_: type[enum.Enum]) -> Hook:
    allowed = [str(member.value) for member in type_]

    def structure(value: object, _type: Any) -> enum.Enum:
        for member in type_:
            if member.value == value and type(member.value) is type(value):
                return member
        raise ValueProblem(f"unknown value {describe(value)} (allowed: {', '.join(allowed)})")

    return structure


def _is_literal(type_: Any) -> bool:
    return get_origin(type_) is Literal


def _literal_factory(type_: Any) -> Hook:
    choices = get_args(type_)

    def structure(value: object, _type: Any) -> object:
        for choice in choices:
            # Same type only: true must not match a Literal[1] (ruamel's str subclasses may).
            if choice == value and isinstance(value, type(choice)) and type(value) is not bool:
                return choice
            if choice is value:
                return choice
        raise ValueProblem(
            f"unknown value {describe(value)} (allowed: {', '.join(map(str, choices))})"
        )

    return structure


def _is_optional(type_: Any) -> bool:
    args = get_args(type_)
    return get_origin(type_) in (Union, types.UnionType) and len(args) == 2 and type(None) in args


def _optional_factory(converter: cattrs.Converter) -> Callable[[Any], Hook]:
    def factory(type_: Any) -> Hook:
        (inner,) = (arg for arg in get_args(type_) if arg is not type(None))
        hook = converter.get_structure_hook(inner)

        def structure(value: object, _type: Any) -> object:
            if value is None:
                return None
            try:
                return hook(value, inner)
            except WrongType as exc:
                raise WrongType(f"{exc.expected} or null", value) from None

        return structure

    return factory


def _is_sequence(type_: Any) -> bool:
    origin = get_origin(type_)
    if origin is tuple:
        args = get_args(type_)
        return len(args) == 2 and args[1] is Ellipsis
    return origin in (list, Sequence)


def _sequence_factory(converter: cattrs.Converter) -> Callable[[Any], Hook]:
    def factory(type_: Any) -> Hook:
        if get_origin(type_) is list:
            inner = list_structure_factory(type_, converter)
        else:
            # A tuple type made at run time from the field's element type: to mypy a
            # value, where it expects a type.
            homogeneous: Any = tuple[get_args(type_)[0], ...]  # type: ignore[misc]
            inner = homogenous_tuple_structure_factory(homogeneous, converter)

        def structure(value: object, _type: Any) -> object:
            # cattrs would iterate a string character by character.
            if not isinstance(value, list | tuple):
                raise WrongType("a list", value)
            return inner(value, _type)

        return structure

    return factory


def _is_mapping(type_: Any) -> bool:
    return get_origin(type_) in (dict, Mapping) or type_ in (dict, Mapping)


def _mapping_factory(converter: cattrs.Converter) -> Callable[[Any], Hook]:
    def factory(type_: Any) -> Hook:
        inner = mapping_structure_factory(type_, converter)

        # A class that also reads from one scalar (`tool_caches: off`) says how.
        scalar = getattr(type_, "from_scalar", None)

        def structure(value: object, _type: Any) -> object:
            if not isinstance(value, Mapping):
                if scalar is not None:
                    return scalar(value)
                raise WrongType("a mapping", value)
            return inner(value, _type)

        return structure

    return factory


def _attrs_factory(converter: cattrs.Converter) -> Callable[[Any], Hook]:
    def factory(type_: Any) -> Hook:
        inner = make_dict_structure_fn(type_, converter)

        # A class that also reads from one scalar (`tool_caches: off`) says how.
        scalar = getattr(type_, "from_scalar", None)

        def structure(value: object, _type: Any) -> object:
            if not isinstance(value, Mapping):
                if scalar is not None:
                    return scalar(value)
                raise WrongType("a mapping", value)
            return inner(value, _type)

        return structure

    return factory
