"""What ``mcpkit call`` (and friends) show and ask on a terminal while a request runs.

A server may ask for input in the middle of a call (form or URL elicitation), report
progress, and send log messages.  The person at the terminal sees all three on stderr, so
stdout stays the result alone and can be piped.  Questions are read from stdin line by
line, whether or not it is a terminal: a script can answer them with a here-document, and
end of input declines.  ``--no-input`` declines every question without reading anything.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Callable, Iterator
from typing import Any, TextIO

import anyio

from ..client.models import ElicitResult
from ..types.unset import UNSET

#: Tries per field before the whole form is declined (a script's wrong answer must not loop).
_TRIES = 3


class BadAnswer(ValueError):
    """An answer that does not fit the field's schema; the message says what would."""


class TerminalUI:
    """Callbacks for one command: elicitation, progress and server logs, on ``err``."""

    def __init__(
        self,
        *,
        interactive: bool,
        err: TextIO | None = None,
        read_line: Callable[[str], str] | None = None,
    ) -> None:
        self.interactive = interactive
        self.err = err or sys.stderr
        self._read_line = read_line or self._input
        self._bar: Any = None

    # ------------------------------------------------------------------ input requests
    async def ask_form(self, params: dict[str, Any]) -> ElicitResult:
        """Form elicitation: one prompt per field of the requested schema."""
        self._pause_progress()
        message = params.get("message", "")
        if not self.interactive:
            self._say(f"The server asks: {message}\n  (declined: --no-input)")
            return {"action": "decline"}
        self._say(f"\nThe server asks: {message}")
        schema = params.get("requestedSchema") or {}
        required = set(schema.get("required") or [])
        content: dict[str, Any] = {}
        try:
            for key, prop in (schema.get("properties") or {}).items():
                value = await self._ask_field(
                    key, prop if isinstance(prop, dict) else {}, key in required
                )
                if value is not UNSET:
                    content[key] = value
        except EOFError:
            self._say("  (end of input: declined)")
            return {"action": "decline"}
        except BadAnswer as exc:
            self._say(f"  {exc}; declined")
            return {"action": "decline"}
        return {"action": "accept", "content": content}

    async def show_url(self, params: dict[str, Any]) -> ElicitResult:
        """URL elicitation: the person opens the URL themselves; we never open it for them."""
        self._pause_progress()
        url = params.get("url", "")
        if not self.interactive:
            self._say(
                f"The server asks you to open {url} ({params.get('message', '')})\n"
                "  (declined: --no-input)"
            )
            return {"action": "decline"}
        self._say(
            f"\nThe server asks you to open this URL:\n  {url}\n"
            f"  {params.get('message', '')}".rstrip()
        )
        if "elicitationId" in params:  # 2025-11-25: the server says when it is done
            self._say("  (waiting for the server to confirm)")
        else:  # 2026-07-28: the retry is how the outcome is learned, so retry when done
            with contextlib.suppress(EOFError):
                prompt = "  Press Enter once you have finished there: "
                await anyio.to_thread.run_sync(self._read_line, prompt)
        return {"action": "accept"}

    async def _ask_field(self, key: str, prop: dict[str, Any], required: bool) -> Any:
        label = prop.get("title") or key
        description = prop.get("description")
        choices = enum_choices(prop)
        if description:
            self._say(f"  {label}: {description}")
        if choices:
            for number, (value, title) in enumerate(choices, 1):
                self._say(f"    {number}) {title}" + (f" [{value}]" if title != value else ""))
        hint = field_hint(prop, required)
        for attempt in range(_TRIES):
            text = await anyio.to_thread.run_sync(self._read_line, f"  {label} {hint}: ")
            text = text.strip()
            if text == "":
                if "default" in prop:
                    return prop["default"]
                if not required:
                    return UNSET
                problem = "an answer is required"
            else:
                try:
                    return convert_answer(text, prop, choices)
                except BadAnswer as exc:
                    problem = str(exc)
            if attempt == _TRIES - 1:
                raise BadAnswer(f"{key}: {problem}")
            self._say(f"  {problem}; try again")
        raise AssertionError("unreachable")

    # ------------------------------------------------------------------ progress and logs
    def on_progress(self, params: dict[str, Any]) -> None:
        progress = params.get("progress", 0)
        total = params.get("total")
        message = params.get("message") or ""
        if self.err.isatty() and self._rich_progress(progress, total, message):
            return
        share = f"{progress}/{total}" if total else f"{progress}"
        percent = f" ({100 * progress / total:.0f}%)" if total else ""
        self._say(f"progress: {share}{percent} {message}".rstrip())

    def on_log(self, params: dict[str, Any]) -> None:
        self._pause_progress()
        data = params.get("data")
        text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
        logger = f" {params['logger']}:" if params.get("logger") else ""
        self._say(f"[{params.get('level', 'info')}]{logger} {text}")

    @contextlib.contextmanager
    def running(self) -> Iterator[None]:
        """Around a request: the progress bar (if one was started) ends with it."""
        try:
            yield
        finally:
            self._pause_progress()

    def _rich_progress(self, progress: float, total: float | None, message: str) -> bool:
        try:
            from rich.progress import Progress
        except ImportError:  # the 'cli' extra is not installed: plain lines instead
            return False
        if self._bar is None:
            from rich.console import Console

            bar = Progress(console=Console(file=self.err), transient=True)
            bar.start()
            self._bar = (bar, bar.add_task(message or "working", total=total))
        bar, task = self._bar
        bar.update(task, completed=progress, total=total, description=message or "working")
        return True

    def _pause_progress(self) -> None:
        if self._bar is not None:
            self._bar[0].stop()
            self._bar = None

    def _say(self, text: str) -> None:
        print(text, file=self.err, flush=True)

    def _input(self, prompt: str) -> str:
        self.err.write(prompt)
        self.err.flush()
        line = sys.stdin.readline()
        if not line:
            raise EOFError
        return line


def enum_choices(prop: dict[str, Any]) -> list[tuple[Any, str]]:
    """(value, title) of a single-choice field: ``enum`` (+ legacy ``enumNames``) or
    ``oneOf``/``anyOf`` of ``const`` entries; for a multi-choice array, its items' choices."""
    if prop.get("type") == "array" and isinstance(prop.get("items"), dict):
        return enum_choices(prop["items"])
    if isinstance(prop.get("enum"), list):
        names = prop.get("enumNames")
        titles = names if isinstance(names, list) and len(names) == len(prop["enum"]) else None
        return [(v, str(titles[i]) if titles else str(v)) for i, v in enumerate(prop["enum"])]
    for key in ("oneOf", "anyOf"):
        options = prop.get(key)
        if (
            isinstance(options, list)
            and options
            and all(isinstance(o, dict) and "const" in o for o in options)
        ):
            return [(o["const"], str(o.get("title", o["const"]))) for o in options]
    return []


def field_hint(prop: dict[str, Any], required: bool) -> str:
    kind = prop.get("type", "string")
    parts = [f"{kind}" + ("" if required else ", optional")]
    if prop.get("type") == "array":
        parts.append("comma-separated")
    if prop.get("format"):
        parts.append(str(prop["format"]))
    if "default" in prop:
        parts.append(f"default {json.dumps(prop['default'], ensure_ascii=False)}")
    return "(" + ", ".join(parts) + ")"


def convert_answer(
    text: str, prop: dict[str, Any], choices: list[tuple[Any, str]] | None = None
) -> Any:
    """A typed value for ``text`` under ``prop``, or :class:`BadAnswer` saying what fits."""
    choices = enum_choices(prop) if choices is None else choices
    kind = prop.get("type")
    if kind == "array":
        return [
            _choose(part.strip(), choices) if choices else part.strip()
            for part in text.split(",")
            if part.strip()
        ]
    if choices:
        return _choose(text, choices)
    if kind == "boolean":
        lowered = text.lower()
        if lowered in ("y", "yes", "true", "1", "on"):
            return True
        if lowered in ("n", "no", "false", "0", "off"):
            return False
        raise BadAnswer(f"expected yes or no, got {text!r}")
    if kind in ("integer", "number"):
        try:
            value: float = int(text) if kind == "integer" else float(text)
        except ValueError:
            raise BadAnswer(
                f"expected {'an integer' if kind == 'integer' else 'a number'}, got {text!r}"
            ) from None
        low, high = prop.get("minimum"), prop.get("maximum")
        if (low is not None and value < low) or (high is not None and value > high):
            raise BadAnswer(f"expected a value between {low} and {high}, got {text}")
        return value
    return text


def _choose(text: str, choices: list[tuple[Any, str]]) -> Any:
    for value, title in choices:
        if text in (str(value), title):
            return value
    if text.isdigit() and 1 <= int(text) <= len(choices):
        return choices[int(text) - 1][0]
    names = ", ".join(str(value) for value, _ in choices)
    raise BadAnswer(f"expected one of {names} (or its number), got {text!r}")
