"""End to end in a real browser: ``mcpkit host --web`` driven by Playwright and Debian's
Chromium (``/usr/bin/chromium``, installed by ``.ci/run``; never a downloaded browser).

One host process for the module, started exactly as a person would, with two servers (our
alpha test server and the MCP App example) and a scripted model.  Screenshots of every
step land in ``test-artifacts/host-web/`` at the repository root.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hostkit import (
    PAGE_TIMEOUT_MS,
    REPO,
    SERVERS,
    page_post,
    playwright,
    say,
    trusted_env,
    web_host,
)

ARTIFACTS = REPO / "test-artifacts" / "host-web"

playwright()  # skips the module without Playwright or Chromium


@pytest.fixture(scope="module")
def host_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("web-host")
    config = {
        "mcpServers": {
            "alpha": {
                "command": sys.executable,
                "args": [str(SERVERS / "alpha.py")],
                "env": {"HOST_TEST_DIR": str(folder)},
            },
            "dice": {"command": sys.executable, "args": [str(REPO / "examples" / "app_server.py")]},
        },
        "permissions": {"default": "ask"},
        "model": {
            "provider": "scripted",
            "script": [
                {"tool_calls": [{"name": "alpha__write_note", "arguments": {"text": "buy tea"}}]},
                {"text": "Done: the note is saved."},
            ],
        },
    }
    with web_host(config, folder) as url:
        yield url


@pytest.fixture
def page(browser: Any, host_url: str) -> Iterator[Any]:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page = browser.new_page()
    page.set_default_timeout(PAGE_TIMEOUT_MS)
    page.goto(host_url)
    page.wait_for_selector("li.tool")
    yield page
    page.close()


def app_view(page: Any, server: str, uri: str) -> Any:
    """The view of ``server``'s ``uri``, inside its sandbox proxy (on the sandbox origin)."""
    proxy_el = page.wait_for_selector(
        f"[data-testid=app-view][data-server='{server}'][data-uri='{uri}']"
    )
    assert proxy_el.get_attribute("sandbox") == "allow-scripts allow-same-origin"
    page_port = page.url.split(":")[2].split("/")[0]
    assert f":{page_port}/" not in proxy_el.get_attribute("src")  # another origin
    inner_el = proxy_el.content_frame().wait_for_selector("iframe")
    assert inner_el.get_attribute("sandbox") == "allow-scripts"  # an opaque origin
    return inner_el.content_frame()


def shot(page: Any, name: str) -> None:
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"))


def test_the_page_and_api_need_the_token(host_url: str) -> None:
    import httpx

    base = host_url.split("/?")[0]
    assert httpx.get(base + "/").status_code == 401
    assert httpx.get(base + "/api/state").status_code == 401
    assert httpx.get(base + "/api/state", headers={"Host": "evil.example"}).status_code == 403
    token = host_url.split("token=")[1]
    ok = httpx.get(base + "/api/state", headers={"Authorization": f"Bearer {token}"})
    assert ok.status_code == 200
    cross = httpx.post(
        base + "/api/tools/call",
        json={"name": "alpha__echo"},
        headers={"Authorization": f"Bearer {token}", "Origin": "http://evil.example"},
    )
    assert cross.status_code == 403


def test_connect_a_server_and_call_a_tool(page: Any) -> None:
    page.click("#add-server summary")
    page.fill("#srv-name", "beta")
    page.fill("#srv-target", f"{sys.executable} {SERVERS / 'beta.py'}")
    page.click("#srv-connect")
    page.wait_for_selector("li.server[data-server='beta'] .state-ready")
    page.click("li.tool[data-tool='beta__weather']")
    page.fill("#f-city", "Lisbon")
    page.click("#call-button")
    page.wait_for_selector("#result pre.structured")
    assert '"celsius": 21.5' in page.inner_text("#result pre.structured")
    shot(page, "01-connect-and-call")
    page.click("li.tool[data-tool='beta__chart']")
    page.click("#call-button")
    page.wait_for_selector("#result img")
    shot(page, "01b-image-result")


def test_answer_an_elicitation_form(page: Any) -> None:
    page.click("li.tool[data-tool='alpha__ask_name']")
    page.click("#call-button")
    page.wait_for_selector(".dialog[data-kind='elicit'] #f-name")
    page.fill("#f-name", "Ada Lovelace")
    shot(page, "02-elicitation-form")
    page.click("#elicit-submit")
    page.wait_for_selector("#result pre.text")
    assert page.inner_text("#result pre.text") == "Hello, Ada Lovelace!"
    shot(page, "03-elicitation-answered")


def test_approve_a_tool_call_the_model_asked_for(page: Any) -> None:
    say(page, "Please note that I need to buy tea.")
    page.wait_for_selector(".dialog[data-kind='consent'] #approve")
    dialog = page.inner_text(".dialog")
    assert "The model wants to run write_note" in dialog
    assert "buy tea" in dialog and "unverified" in dialog  # readOnlyHint is shown, not trusted
    shot(page, "04-consent-dialog")
    page.click("#approve")
    page.wait_for_selector(".msg.assistant:has-text('Done: the note is saved.')")
    shot(page, "05-chat-after-approval")
    page.click(".tabs button[data-tab='audit']")
    page.wait_for_selector("li.audit:has-text('alpha__write_note')")
    assert "approved by user" in page.inner_text("li.audit:has-text('alpha__write_note')")


def test_an_mcp_app_renders_and_calls_a_tool_through_the_host(page: Any) -> None:
    page.click("li.tool[data-tool='dice__roll_dice']")
    page.fill("#f-count", "3")
    page.click("#call-button")
    frame = app_view(page, "dice", "ui://dice/roller.html")
    frame.wait_for_selector(".die")
    assert len(frame.query_selector_all(".die")) == 3
    # the view cannot reach into the host page (opaque origin)
    assert (
        frame.evaluate(
            "() => { try { return parent.document.title } catch (e) { return 'blocked' } }"
        )
        == "blocked"
    )
    shot(page, "06-app-rendered")
    frame.click("#again")  # the app calls tools/call -> the host's policy asks the person
    page.wait_for_selector(".dialog[data-kind='consent'] #approve")
    assert "The dice app wants to run roll_dice" in page.inner_text(".dialog")
    shot(page, "07-app-tool-call-consent")
    page.click("#approve")
    page.wait_for_selector(".dialog[data-kind='consent']:has-text('roll_history') #approve")
    page.click("#approve")
    frame.wait_for_selector("#status:has-text('rolled through the host')")
    assert len(frame.query_selector_all(".die")) == 3  # the app kept its arguments
    shot(page, "08-app-called-tool")


def test_progress_resources_and_prompts(page: Any) -> None:
    page.click("li.tool[data-tool='alpha__slow']")
    page.fill("#f-steps", "4")
    page.click("#call-button")
    page.wait_for_selector("#result pre.text:has-text('counted to 4')")
    assert page.eval_on_selector("#progress", "el => [el.value, el.max, el.hidden]") == [
        4,
        4,
        False,
    ]
    assert "step 4 of 4" in page.inner_text("#progress-note")
    shot(page, "09-progress")
    page.click(".tabs button[data-tab='resources']")
    page.click("li.resource:has-text('note://alpha/today')")
    page.wait_for_selector("pre.resource-text")
    assert page.inner_text("pre.resource-text") == "Water the plants."
    page.click(".tabs button[data-tab='prompts']")
    page.click("li.prompt:has-text('review')")
    page.fill("#f-topic", "g")  # completion/complete, as the person types
    page.wait_for_function(
        "() => [...document.querySelectorAll('#complete-topic option')]"
        ".map(o => o.value).join('|') === 'green tea|genmaicha|gunpowder'"
    )
    page.fill("#f-topic", "green tea")
    page.click("button:has-text('Get prompt')")
    page.wait_for_selector("#detail pre:has-text('green tea')")
    shot(page, "10-prompt")


def test_a_task_backed_call_shows_its_status(page: Any) -> None:
    page.click("[data-testid='tool:alpha:long_job']")
    page.fill("#f-steps", "20")
    page.click("[data-testid=call-tool]")
    page.wait_for_selector("[data-testid=task-status]:has-text('task working')")
    page.wait_for_selector("#result pre.text:has-text('job done after 20 steps')")
    page.wait_for_selector("[data-testid=task-status]:has-text('task completed')")
    shot(page, "13-task-status")


def test_cancel_a_running_call_from_the_tools_tab(page: Any) -> None:
    page.click("[data-testid='tool:alpha:slow']")
    page.fill("#f-steps", "2000")
    page.click("[data-testid=call-tool]")
    page.wait_for_selector("#progress:not([hidden])")
    page.click("[data-testid=cancel-call]")
    page.wait_for_selector("#result .cancelled:has-text('cancelled by the user')")
    assert page.is_hidden("[data-testid=cancel-call]")
    shot(page, "11-call-cancelled")
    page.click(".tabs button[data-tab='audit']")
    page.wait_for_selector("li.audit:has-text('alpha__slow'):has-text('cancelled')")


def test_a_config_command_runs_only_after_the_person_trusts_it(
    browser: Any, tmp_path: Path
) -> None:
    config = {
        "mcpServers": {"beta": {"command": sys.executable, "args": [str(SERVERS / "beta.py")]}}
    }
    with web_host(config, tmp_path, trusted=False) as url:
        page = browser.new_page()
        page.set_default_timeout(PAGE_TIMEOUT_MS)
        page.goto(url)
        page.wait_for_selector("li.server[data-server='beta'] .state-untrusted")
        assert str(SERVERS / "beta.py") in page.inner_text("li.server[data-server='beta']")
        assert page.query_selector("[data-testid='tool:beta:weather']") is None
        closed = page_post(url, "/api/apps/open", {"server": "beta", "uri": "ui://beta/v.html"})
        assert closed.status_code == 503  # listed, waiting for the person's trust
        assert closed.json()["error"] == (
            "server 'beta' is not trusted yet (trust it in the servers list)"
        )
        shot(page, "12-untrusted-server")
        page.click("[data-testid='trust:beta']")
        page.wait_for_selector("li.server[data-server='beta'] .state-ready")
        page.wait_for_selector("[data-testid='tool:beta:weather']")
        page.close()
    # remembered for this user (here: the test's trust file)
    trusted = json.loads((tmp_path / "trusted-servers.json").read_text())
    assert [entry["command"] for entry in trusted["launches"].values()] == [
        f"{sys.executable} {SERVERS / 'beta.py'}"
    ]


def test_the_page_asks_again_when_the_working_directory_changed(
    browser: Any, tmp_path: Path
) -> None:
    """``python server.py`` trusted in one folder is asked about again from another, and
    the page says what changed."""
    first, second = tmp_path / "first", tmp_path / "second"
    for folder in (first, second):
        folder.mkdir()
        (folder / "server.py").write_text((SERVERS / "beta.py").read_text())
    config = {"mcpServers": {"beta": {"command": sys.executable, "args": ["server.py"]}}}
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps(config))
    trusted_env(path, tmp_path, cwd=first)  # trusted as run from the first folder
    with web_host(path, tmp_path, cwd=second, trusted=False) as url:
        page = browser.new_page()
        page.set_default_timeout(PAGE_TIMEOUT_MS)
        page.goto(url)
        server = page.wait_for_selector("li.server[data-server='beta']:has(.state-untrusted)")
        assert f"working directory: {first} -> {second}" in server.inner_text()
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "trust-after-changed-cwd.png"))
        page.close()


def test_descriptions_read_as_text_labels_fit_and_a_form_has_one_refusal(page: Any) -> None:
    """A reStructuredText description shows its words, not its backticks; every tab label
    fits its button; a form offers one way to refuse (Decline), explained."""
    listed = page.inner_text("li.tool[data-tool='dice__roll_dice'] .small")
    assert listed.startswith("Roll count dice with sides sides each") and "`" not in listed
    for tab in page.query_selector_all(".tabs button"):
        assert tab.evaluate("b => b.scrollWidth <= b.clientWidth"), tab.inner_text()
    page.click("li.tool[data-tool='alpha__ask_name']")
    page.click("#call-button")
    dialog = page.wait_for_selector(".dialog[data-kind='elicit']")
    buttons = [b.inner_text() for b in dialog.query_selector_all(".actions button")]
    assert buttons == ["Decline", "Submit"]
    assert "Decline tells the server you said no" in dialog.inner_text()
    page.click("#elicit-decline")
    page.wait_for_selector("#result:has-text('no name (decline)')")
