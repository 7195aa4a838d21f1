"""The policy floor (tier T1): manifest, default floor, rungs, fold, compiled decider.

Build a ``Policy`` from a ``fak-policy/v1`` manifest (strict; a bad file is a ``PolicyError``),
then decide calls with ``CompiledFloor(policy).decide(call)`` or fold any ``Chain`` of rungs.
Imports only ``fak.abi`` and third-party validation/regex libraries; no I/O on the decide path.
"""

from fak.policy.answer import Named, answer_note, answer_sources
from fak.policy.args import args_digest, canonical_args, decode_args
from fak.policy.compiled import CompiledFloor, default_chain
from fak.policy.fold import Chain, Rung, RungTrace, fold
from fak.policy.grammar import Grammar, GrammarRung, Param
from fak.policy.manifest import (
    MANIFEST_VERSION,
    ArgRule,
    Manifest,
    PolicyError,
    PolicyErrorCode,
    Posture,
    dump_manifest,
    load_manifest,
    load_manifest_file,
    manifest_hash,
    refusal_vocabulary,
)
from fak.policy.monitor import REDACTED, ROOT_META, Monitor
from fak.policy.policy import Policy, default_manifest
from fak.policy.preflight import PreflightRung, Schema
from fak.policy.shapes import READ_PREFIXES, read_shaped, write_shaped

__all__ = [
    "MANIFEST_VERSION",
    "READ_PREFIXES",
    "REDACTED",
    "ROOT_META",
    "ArgRule",
    "Chain",
    "CompiledFloor",
    "Grammar",
    "GrammarRung",
    "Manifest",
    "Monitor",
    "Named",
    "Param",
    "Policy",
    "PolicyError",
    "PolicyErrorCode",
    "Posture",
    "PreflightRung",
    "Rung",
    "RungTrace",
    "Schema",
    "answer_note",
    "answer_sources",
    "args_digest",
    "canonical_args",
    "decode_args",
    "default_chain",
    "default_manifest",
    "dump_manifest",
    "fold",
    "load_manifest",
    "load_manifest_file",
    "manifest_hash",
    "read_shaped",
    "refusal_vocabulary",
    "write_shaped",
]
