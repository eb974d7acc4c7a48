"""The root exception, so callers can catch everything auditstream raises on purpose."""


class AuditstreamError(Exception):
    """Base class for errors that carry a message meant for the operator."""
