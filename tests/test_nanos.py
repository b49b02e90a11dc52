"""The Nanos runtime's parts that need no VM: configurations, ops command lines, what a QEMU
command line and process say, and refusing bad settings. The VM tests are in
test_nanos_runtime.py."""

import json

import pytest

from edgebench.errors import ConfigError
from edgebench.experiments.common import runtime_options, select_runtimes
from edgebench.paths import NANOS_CONFIGS_DIR
from edgebench.runtimes import Limits
from edgebench.runtimes.nanos import NanosRuntime
from edgebench.runtimes.ops import (image_config, load_base_config, ops_notes, ops_run_argv, parse_ops_version,
                                    run_config)
from edgebench.runtimes.qemu import accelerator, parse_qemu_argv, parse_qemu_state, vcpus_for

# What ops 0.1.x started on a Linux host with /dev/kvm (from ps while `ops run` ran).
OPS_QEMU = ("qemu-system-x86_64 -machine accel=kvm:tcg -cpu host -no-reboot -machine q35 "
            "-device pcie-root-port,port=0x10,chassis=1,id=pci.1,bus=pcie.0,multifunction=on,addr=0x3 "
            "-drive file=/root/.ops/images/edgebench-go-http,format=raw,if=none,id=hd0 "
            "-device scsi-hd,bus=scsi0.0,drive=hd0 -smp 2 -m 128M -device virtio-rng-pci "
            "-netdev user,id=n0,hostfwd=tcp::18301-:8080 -device virtio-net,netdev=n0 "
            "-display none -serial stdio -cpu max").split()


def test_every_http_app_and_iomt_has_a_config_with_the_papers_settings():
    for app in ("go-http", "node-http", "iomt"):
        config = load_base_config(app)
        assert set(config) >= {"RunConfig"}, app
        assert "Memory" in config["RunConfig"], app
    assert load_base_config("go-http")["RunConfig"]["Ports"] == ["8080"]
    with pytest.raises(ConfigError, match="nanos-configs/sysbench.json"):
        load_base_config("sysbench")
    assert (NANOS_CONFIGS_DIR / "README.md").exists()


def test_image_config_moves_the_port_to_the_command_line_and_keeps_the_rest():
    base = {"RunConfig": {"Memory": "2048M", "CPUs": 8, "Ports": ["8080"]}, "Env": {"A": "1"}}
    config = image_config(base, 8080, args=["server.js"], files=["server.js"])
    assert "Ports" not in config["RunConfig"]
    assert config["Env"] == {"A": "1", "PORT": "8080"}
    assert config["Args"] == ["server.js"] and config["Files"] == ["server.js"]
    assert base["RunConfig"]["Ports"] == ["8080"], "the published configuration is not changed"


def test_run_config_asks_for_whole_vcpus_and_the_memory_limit():
    image = image_config(load_base_config("go-http"), 8080)
    config = run_config(image, Limits(cpus=1.5, memory_mb=128))
    assert config["RunConfig"]["CPUs"] == 2
    assert config["RunConfig"]["Memory"] == "128M"
    assert "Ports" not in config["RunConfig"]
    assert run_config(image, Limits())["RunConfig"]["Memory"] == "2048M"  # the published default
    assert [vcpus_for(c) for c in (None, 0.5, 1, 2, 2.01)] == [1, 1, 1, 2, 3]


def test_ops_run_skips_the_build_and_forwards_host_to_guest_port():
    argv = ops_run_argv("/usr/local/bin/ops", "/w/go-http", "edgebench-go-http", "/l/run.json", 18301, 8080,
                        "auto")
    assert argv[:3] == ["/usr/local/bin/ops", "run", "/w/go-http"]
    assert "-s" in argv and argv[argv.index("-p") + 1] == "18301-8080"
    assert argv[argv.index("-i") + 1] == "edgebench-go-http"
    assert "--accel=false" not in argv
    published = ops_run_argv("ops", "p", "img", "c.json", 1, 2, "tcg", skip_build=False)
    assert "-s" not in published and "--accel=false" in published
    batch = ops_run_argv("ops", "p", "img", "c.json", None, None, "auto")
    assert "-p" not in batch


def test_qemu_command_line_gives_vcpus_memory_network_and_image():
    launch = parse_qemu_argv(OPS_QEMU)
    assert launch.vcpus == 2 and launch.memory_mb == 128
    assert launch.accel_requested == ("kvm", "tcg")
    assert launch.network == "qemu user-mode (slirp), hostfwd tcp::18301-:8080"
    assert launch.image == "/root/.ops/images/edgebench-go-http"
    other = parse_qemu_argv(["qemu", "-smp", "cpus=4,sockets=1", "-m", "size=2G", "-accel", "tcg",
                             "-netdev", "tap,id=n0,ifname=tap0,script=no"])
    assert (other.vcpus, other.memory_mb, other.accel_requested, other.network) == (4, 2048, ("tcg",), "tap tap0")
    bare = parse_qemu_argv(["qemu", "--enable-kvm"])
    assert (bare.vcpus, bare.memory_mb, bare.accel_requested, bare.network) == (1, 128, ("kvm",), "none")


@pytest.mark.parametrize("requested, fds, expected", [
    (("kvm", "tcg"), ["/dev/kvm", "anon_inode:kvm-vm", "anon_inode:kvm-vcpu:0"], "kvm"),
    (("kvm", "tcg"), ["/dev/null", "socket:[1]"], "tcg"),          # the silent fallback
    ((), ["/dev/null"], "tcg"),
    (("kvm",), ["/dev/null"], "unknown"),
    (("kvm", "tcg"), None, "unknown"),                             # files unreadable: cannot tell
    (("tcg",), None, "tcg"),
    (("kvm",), None, "kvm"),
])
def test_accelerator_is_read_from_the_process_when_it_can_be(requested, fds, expected):
    name, evidence = accelerator(requested, fds)
    assert name == expected and evidence


def test_qemu_state_sections_split():
    text = "== cmdline\nqemu\n-smp\n1\n== fds\n/dev/null\nanon_inode:kvm-vm\n== affinity\n0\n"
    cmdline, fds, affinity = parse_qemu_state(text)
    assert cmdline == ["qemu", "-smp", "1"] and "anon_inode:kvm-vm" in fds and affinity == ["0"]
    assert parse_qemu_state("== cmdline\nqemu\n== fds\n== affinity\n")[1] is None


def test_ops_output_parsed():
    text = "version lookup failed, using local.\nOps version: 0.1.43\nNanos version: 0.1.54\n"
    assert parse_ops_version(text) == {"ops": "0.1.43", "nanos": "0.1.54"}
    assert ops_notes(text + "booting /root/.ops/images/x ...\n") == ["version lookup failed, using local."]


def test_bad_settings_refused(local):
    with pytest.raises(ConfigError, match="auto, kvm, tcg"):
        NanosRuntime(local, accel="fast")
    assert NanosRuntime(local, require_kvm=True).accel == "kvm"
    assert runtime_options(require_kvm="true")["nanos"]["require_kvm"] is True
    assert runtime_options()["nanos"]["require_kvm"] is False


def test_without_ops_the_reason_names_what_to_install(local):
    rt = NanosRuntime(local)
    rt._ops = None  # as on a machine without ops
    why = rt.availability()
    assert not why and "no ops" in why.reason and "github.com/nanovms/ops" in why.reason


def test_tools_are_not_offered_to_nanos(local):
    selection = select_runtimes(local, "auto", "unit", apps=["sysbench"])
    assert "nanos" not in [rt.name for rt in selection.runtimes]
    # The reason is the app, asked before ops is looked for: true with or without ops here.
    assert "nanos does not run sysbench" in selection.skipped["nanos"]
    # Named too (make figures RUNTIMES=... names runtimes for every notebook): left out, said why.
    named = select_runtimes(local, "native,nanos", "unit", apps=["sysbench"])
    assert [rt.name for rt in named.runtimes] == ["native"]
    assert "nanos does not run sysbench" in named.skipped["nanos"]
    with pytest.raises(ConfigError, match="no runtime available on local: nanos: nanos does not run sysbench"):
        select_runtimes(local, "nanos", "unit", apps=["sysbench"])


def test_published_configs_are_valid_json():
    for path in NANOS_CONFIGS_DIR.glob("*.json"):
        json.loads(path.read_text())


def test_tcg_rows_get_their_own_label_and_still_see_the_papers_value():
    import pandas as pd
    from edgebench.plotting.style import in_runtime_order
    from edgebench.plotting.tables import mark_emulated, reference_for
    df = pd.DataFrame({"runtime": ["native", "nanos", "nanos"], "accelerator": [None, "tcg", "kvm"],
                       "value": [1.0, 2.0, 3.0]})
    marked = mark_emulated(df)
    assert list(marked["runtime"]) == ["native", "nanos (TCG)", "nanos"]
    assert list(df["runtime"]) == ["native", "nanos", "nanos"], "the caller's frame is not changed"
    assert in_runtime_order(["nanos (TCG)", "docker", "native"]) == ["native", "docker", "nanos (TCG)"]
    ref = pd.DataFrame({"runtime": ["nanos", "docker"], "metric": ["m", "m"], "value": [12.0, 158.0]})
    both = reference_for(ref, marked["runtime"])
    assert set(both[both["value"] == 12.0]["runtime"]) == {"nanos", "nanos (TCG)"}
    assert len(reference_for(ref, ["native"])) == 2


def test_a_failed_start_of_an_emulated_runtime_keeps_its_name():
    """A failed start records no accelerator; it was drawn as a second runtime, "linux-vm" beside
    "linux-vm (TCG)", in one legend."""
    import pandas as pd
    from edgebench.plotting.tables import mark_emulated
    df = pd.DataFrame({"runtime": ["native", "linux-vm", "linux-vm", "docker"],
                       "accelerator": [None, "tcg", None, None], "status": ["ok", "ok", "failed", "failed"]})
    assert list(mark_emulated(df)["runtime"]) == ["native", "linux-vm (TCG)", "linux-vm (TCG)", "docker"]


def test_run_notes_name_absent_runtimes_and_emulated_ones(tmp_path):
    import pandas as pd
    from edgebench.plotting import run_notes
    (tmp_path / "meta.json").write_text(json.dumps({"notes": {"skipped_runtimes": {"nanos": "no ops on local"}}}))
    text = run_notes(tmp_path, pd.DataFrame({"runtime": ["docker"], "accelerator": [None]}))
    assert "**nanos** not measured: no ops on local" in text
    (tmp_path / "meta.json").write_text(json.dumps({"notes": {"absent_runtimes": {"nanos": "runs no Linux tools"}}}))
    text = run_notes(tmp_path, pd.DataFrame({"runtime": ["docker"], "accelerator": [None]}))
    assert "**nanos** not in this experiment: runs no Linux tools" in text and "Every runtime" not in text
    (tmp_path / "meta.json").write_text(json.dumps({"notes": {}}))
    text = run_notes(tmp_path, pd.DataFrame({"runtime": ["nanos"], "accelerator": ["tcg"]}))
    assert "accelerator: tcg" in text and "software emulation" in text
    rows = pd.DataFrame({"runtime": ["docker", "docker", "lxd"], "accelerator": [None] * 3,
                         "status": ["not measurable"] * 2 + ["failed"],
                         "error": ["no power meter"] * 2 + ["timed out"]})
    text = run_notes(tmp_path, rows)
    assert "**docker** is in no figure: all 2 of its rows are not measurable here, most often: no power meter" in text
    assert "**lxd** is in no figure: its one row failed: timed out" in text  # not "all 1 of its rows"


@pytest.mark.parametrize("app, port", [("go-http", "8080"), ("iomt", None)])
def test_the_image_tells_a_service_its_port_and_a_batch_app_none(app, port):
    """Built against a scripted target (ops 'found', the image 'present'): what ops is given."""
    from conftest import ScriptedTarget
    from edgebench.apps import APPS, BuiltApp
    target = ScriptedTarget([("command -v ops", "/usr/local/bin/ops\n"), ("OPS_HOME", "/root/.ops\n")])
    rt = NanosRuntime(target, "img")
    built = BuiltApp(APPS[app], "x86_64", f"/root/.cache/edgebench/apps/{app}/{app}", 1, [app])
    out = rt.build_image(built, f"edgebench-{app}")
    written = json.loads(target.written(out["config_path"]))
    assert written == out["config"]
    assert written.get("Env", {}).get("PORT") == port
    assert any(c.startswith("cd ") and " build " in c for c in target.commands)
