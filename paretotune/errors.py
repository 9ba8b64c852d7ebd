"""Errors that reach the user as one line (exit code 2), never as a traceback."""
from __future__ import annotations


class ParetotuneError(Exception):
    """Base class for every error paretotune raises on purpose."""


class UserError(ParetotuneError):
    """Bad input: a campaign field, a file, a missing tool. Printed as one line, exit code 2.

    The message must name what is wrong and where (a field path, a file), and what to try.
    """


class ToolchainError(UserError):
    """ptxas (or another external tool) is missing, too old, or mismatched with an ACF."""


class CandidateFailure(ParetotuneError):
    """One candidate failed (compile error, timeout, wrong answer). Stored as data, never fatal."""
