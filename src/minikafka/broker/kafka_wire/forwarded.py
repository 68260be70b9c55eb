"""Answers to Kafka-listener requests a broker forwards to the active controller (topic and credential admin)."""

from __future__ import annotations

from typing import Any

from minikafka.broker.controller_client import NO_CONTROLLER
from minikafka.common.errors import ErrorCode


def forwarded_outcome(answer: Any, result: Any, subject: str = "topic") -> tuple[ErrorCode, str | None]:
    """The error for one entry of a request forwarded to the controller: the whole request's if the controller
    refused it (or none answered)."""
    if answer is None:
        return ErrorCode.REQUEST_TIMED_OUT, NO_CONTROLLER
    if answer.error_code != ErrorCode.NONE:
        return ErrorCode.of(answer.error_code), answer.error_message or None
    if result is None:
        return ErrorCode.UNKNOWN_SERVER_ERROR, f"the controller did not answer for this {subject}"
    code = ErrorCode.of(result.error_code)
    return code, (result.error_message or None) if code != ErrorCode.NONE else None


def forwarded_request_error(answer: Any) -> tuple[ErrorCode, str | None]:
    """The error of a whole request forwarded to the controller: none answered, or it refused the request."""
    if answer is None:
        return ErrorCode.REQUEST_TIMED_OUT, NO_CONTROLLER
    code = ErrorCode.of(answer.error_code)
    return code, (answer.error_message or None) if code != ErrorCode.NONE else None
