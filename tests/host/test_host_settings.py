"""Settings on the page, in real Chromium: with no model the page says how to add one; a
model chosen there (an OpenAI-compatible server with its base URL, here a local fake that
streams a recorded answer) is used at once, its key kept in a 0600 file (no keyring in
the test) and never sent back to the page, and the choice outlives the host process."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from hostkit import (
    ARTIFACTS,
    PAGE_TIMEOUT_MS,
    SERVER_START_MS,
    SERVERS,
    Transcripts,
    calls,
    playwright,
    say,
    web_host,
)

from support.servers import ThreadServer

playwright()  # skips the module without Playwright or Chromium


def test_a_model_chosen_on_the_page_is_used_kept_and_its_key_private(
    browser: Any, tmp_path: Path
) -> None:
    api = Transcripts("/v1/chat/completions", ["openai_stream_text.sse"] * 2)
    config = {
        "mcpServers": {"alpha": {"command": sys.executable, "args": [str(SERVERS / "alpha.py")]}}
    }
    with ThreadServer(api.app) as fake:
        first_and_second_run(browser, tmp_path, config, api, fake.base)


def first_and_second_run(
    browser: Any, tmp_path: Path, config: dict[str, Any], api: Transcripts, base: str
) -> None:
    with web_host(config, tmp_path) as url:
        page = browser.new_page()
        page.set_default_timeout(PAGE_TIMEOUT_MS)
        page.goto(url)
        hint = page.wait_for_selector("[data-testid=no-model]")
        assert "No model is configured" in hint.inner_text()
        assert '"provider": "openai"' in hint.inner_text() and "baseUrl" in hint.inner_text()
        assert page.is_hidden("#chat-form")

        page.click("#choose-model")
        page.wait_for_selector("[data-testid=settings]")
        page.select_option("#set-provider", "anthropic")
        page.click("#set-save")  # no key: refused, and nothing kept
        page.wait_for_selector("#set-status.error:has-text('Anthropic needs an API key')")
        assert not (tmp_path / "host-settings.json").exists()
        refused = page.evaluate(
            "fetch('/api/settings', {method: 'POST', headers: {Authorization: 'Bearer ' + TOKEN,"
            " 'Content-Type': 'application/json'}, body: JSON.stringify({provider: 'openai',"
            " temperature: 1})}).then(async r => [r.status, (await r.json()).error])"
        )
        assert refused == [400, "unknown model setting 'temperature'"]
        page.select_option("#set-provider", "openai")
        page.fill("#set-model", "gpt-test")
        page.fill("#set-base-url", base + "/v1")
        page.fill("#set-key", "sk-local-secret")
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "settings-panel.png"))
        page.click("#set-save")
        page.wait_for_selector("#set-status:has-text('In use: gpt-test')")
        page.wait_for_selector("#model-pill:has-text('gpt-test')")
        assert page.is_hidden("[data-testid=no-model]")
        # the permissions below follow the server's tools once it is up
        page.wait_for_selector("[data-testid='perm:tool:alpha__add']")
        page.query_selector("#detail-pane").screenshot(path=str(ARTIFACTS / "settings-model.png"))

        say(page, "What is the sum?")
        page.wait_for_selector(".msg.assistant:has-text('The sum is 42.')")
        assert api.headers[0]["authorization"] == "Bearer sk-local-secret"
        assert api.bodies[0]["model"] == "gpt-test"

        shown = page.evaluate(
            "fetch('/api/settings', {headers: {Authorization: 'Bearer ' + TOKEN}})"
            ".then(r => r.text())"
        )
        assert "sk-local-secret" not in shown and json.loads(shown)["hasKey"] is True
        page.close()

    settings = json.loads((tmp_path / "host-settings.json").read_text())
    assert settings == {
        "model": {"provider": "openai", "model": "gpt-test", "baseUrl": base + "/v1"}
    }
    keys = tmp_path / "host-keys.json"
    assert json.loads(keys.read_text()) == {"openai": "sk-local-secret"}
    assert keys.stat().st_mode & 0o777 == 0o600
    assert (tmp_path / "host-settings.json").stat().st_mode & 0o777 == 0o600

    # the next start uses the kept choice and key without asking
    with web_host(config, tmp_path) as url:
        page = browser.new_page()
        page.set_default_timeout(PAGE_TIMEOUT_MS)
        page.goto(url)
        page.wait_for_selector("#model-pill:has-text('gpt-test')")
        say(page, "Again?")
        page.wait_for_selector(".msg.assistant:has-text('The sum is 42.') >> nth=1")
        page.close()


CALL = (
    "(name) => fetch('/api/tools/call', {method: 'POST', headers: {Authorization: 'Bearer ' +"
    " TOKEN, 'Content-Type': 'application/json'}, body: JSON.stringify({name, arguments:"
    " {a: 2, b: 3}})}).then(async r => [r.status, await r.json()])"
)
POST = (
    "([path, body]) => fetch(path, {method: 'POST', headers: {Authorization: 'Bearer ' +"
    " TOKEN, 'Content-Type': 'application/json'}, body: JSON.stringify(body)})"
    ".then(async r => [r.status, await r.json()])"
)


def choose(page: Any, testid: str, value: str, saved: str) -> None:
    page.select_option(f"[data-testid='{testid}']", value)
    page.wait_for_selector(f"#perm-status:has-text('{saved}')")


def test_permissions_chosen_on_the_page_apply_at_once_are_kept_and_audited(
    browser: Any, tmp_path: Path
) -> None:
    config = {
        "mcpServers": {
            "alpha": {
                "command": sys.executable,
                "args": [str(SERVERS / "alpha.py")],
                "env": {"HOST_TEST_DIR": str(tmp_path)},
                "tools": {"echo": "allow"},
            }
        },
        "permissions": {"default": "ask"},
    }
    with web_host(config, tmp_path) as url:
        page = browser.new_page()
        page.set_default_timeout(PAGE_TIMEOUT_MS)
        page.goto(url)
        page.wait_for_selector("[data-testid='tool:alpha:add']", timeout=SERVER_START_MS)
        page.click("#open-settings")
        server = page.wait_for_selector("[data-testid='perm:server:alpha']")
        assert server.evaluate("s => s.value") == "ask"
        echo = page.wait_for_selector("[data-testid='perm:tool:alpha__echo']")
        assert echo.evaluate("s => s.value") == "allow"  # the config file's, shown

        choose(page, "perm:server:alpha", "deny", "alpha: deny")
        status, answer = page.evaluate(CALL, "alpha__add")
        assert status == 403 and answer["denied"] is True  # at once, no restart
        assert calls(tmp_path, "alpha") == []  # never reached the server

        choose(page, "perm:tool:alpha__add", "allow", "alpha / add: allow")
        status, answer = page.evaluate(CALL, "alpha__add")
        assert status == 200, answer  # allowed: no question asked
        assert calls(tmp_path, "alpha") == ["add"]
        page.click("[data-tab=tools]")
        page.wait_for_selector("[data-testid='tool:alpha:add'] .badge:text('allow')")

        choose(page, "perm:tool:alpha__add", "", "alpha / add: follows its server")
        assert page.evaluate(CALL, "alpha__add")[0] == 403
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "settings-permissions.png"))
        page.query_selector("#detail-pane").screenshot(
            path=str(ARTIFACTS / "settings-permissions-panel.png")
        )

        for body, error in [
            ({"target": "server", "name": "alpha", "permission": "sometimes"}, "not 'sometimes'"),
            ({"target": "server", "name": "alpha", "permission": None}, "not None"),
            ({"target": "server", "name": "nope", "permission": "allow"}, "no server named"),
            ({"target": "tool", "name": "alpha__nope", "permission": "allow"}, "no tool named"),
            ({"target": "server", "name": "alpha", "permission": "ask", "x": 1}, "'x'"),
        ]:
            status, answer = page.evaluate(POST, ["/api/permissions", body])
            assert status == 400 and error in answer["error"], (body, answer)

        audit = page.evaluate(
            "fetch('/api/audit', {headers: {Authorization: 'Bearer ' + TOKEN}}).then(r => r.json())"
        )
        chosen = [(e["name"], e["decision"], e["by"]) for e in audit if e["kind"] == "permission"]
        assert chosen == [
            ("alpha", "deny", "user"),
            ("alpha__add", "allow", "user"),
            ("alpha__add", "as its server", "user"),
        ]
        page.close()

    saved = json.loads((tmp_path / "host-settings.json").read_text())
    assert saved == {"permissions": {"servers": {"alpha": "deny"}, "tools": {"alpha__add": None}}}

    # the next start applies the kept choices over the config file's
    with web_host(config, tmp_path) as url:
        page = browser.new_page()
        page.set_default_timeout(PAGE_TIMEOUT_MS)
        page.goto(url)
        page.wait_for_selector("[data-testid='tool:alpha:add']", timeout=SERVER_START_MS)
        page.click("#open-settings")
        server = page.wait_for_selector("[data-testid='perm:server:alpha']")
        assert server.evaluate("s => s.value") == "deny"
        assert page.evaluate(CALL, "alpha__add")[0] == 403
        page.close()
