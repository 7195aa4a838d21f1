"""``fak.config.Settings``: every knob has one variable and one default, written once."""

from __future__ import annotations

from dataclasses import fields

from fak.config import Settings
from fak.gateway.state import GatewayOptions


def test_every_setting_names_its_fak_variable_and_an_empty_environ_gives_the_defaults() -> None:
    names = [f.metadata["env"] for f in fields(Settings)]
    assert all(name.startswith("FAK_") for name in names)
    assert len(set(names)) == len(names) == 22
    assert Settings.from_environ({}) == Settings()
    blank = {name: "" for name in names}
    assert Settings.from_environ(blank) == Settings()


def test_each_variable_reaches_its_own_field_and_bad_bounded_values_fall_back() -> None:
    got = Settings.from_environ(
        {
            "FAK_MAX_MESSAGES": " 12 ",
            "FAK_MAX_TOOL_CALLS": "0",  # below its minimum of 1: the default
            "FAK_HTTP_READ_TIMEOUT_S": "0",  # 0 disables: kept
            "FAK_HTTP_WRITE_TIMEOUT_S": "-1",  # negative: the default
            "FAK_WITNESS_TTL_S": "0",  # 0 is not a ttl: the default
            "FAK_ALLOWED_HOSTS": " a.example, ,b.example ",
            "FAK_WITNESS_KEY": " k ",  # a key is taken as written
            "FAK_CAS_URL": "  ",
            "FAK_HOOKD_IDLE_S": "x",  # not a number: the default
        }
    )
    assert got.max_messages == 12
    assert got.max_tool_calls == 1024
    assert got.http_read_timeout_s == 0.0
    assert got.http_write_timeout_s == 90.0
    assert got.witness_ttl_s == 900.0
    assert got.allowed_hosts == ("a.example", "b.example")
    assert got.witness_key == " k "
    assert got.cas_url is None
    assert got.hookd_idle_s == 600.0
    assert Settings.from_environ({"FAK_HOOKD_IDLE_S": "20"}).hookd_idle_s == 20.0


def test_gateway_options_default_to_the_settings_defaults_and_carry_settings_over() -> None:
    default, settings = GatewayOptions(), Settings()
    assert default.max_messages == settings.max_messages == 4096
    assert default.max_tool_calls == settings.max_tool_calls == 1024
    assert default.read_timeout_s == settings.http_read_timeout_s == 30.0
    assert default.write_timeout_s == settings.http_write_timeout_s == 90.0
    assert default.idle_timeout_s == settings.http_idle_timeout_s == 120.0

    tuned = Settings.from_environ(
        {"FAK_MAX_MESSAGES": "7", "FAK_HTTP_IDLE_TIMEOUT_S": "3", "FAK_CORS_ORIGINS": "https://a"}
    )
    options = GatewayOptions.from_settings(tuned, require_key="k", recall_dir="/r")
    assert (options.max_messages, options.idle_timeout_s) == (7, 3.0)
    assert options.cors_origins == ("https://a",)
    assert options.allowed_hosts is None  # no FAK_ALLOWED_HOSTS: loopback names only
    assert (options.require_key, options.recall_dir) == ("k", "/r")
    assert GatewayOptions.from_settings(tuned, allowed_hosts=("*",)).allowed_hosts == ("*",)


def test_pageout_switch_reads_on_and_off_words_and_keeps_the_default_otherwise() -> None:
    assert Settings().pageout_wire is False
    for word in ("1", "on", "TRUE", " yes "):
        assert Settings.from_environ({"FAK_PAGEOUT": word}).pageout_wire is True
    for word in ("0", "off", "false", "no", "maybe"):
        assert Settings.from_environ({"FAK_PAGEOUT": word}).pageout_wire is False
    assert GatewayOptions.from_settings(Settings(pageout_wire=True)).pageout is True
