"""lee_jax/cli.py: output paths checked before the work, as one-line errors."""

import os
import subprocess
import sys

import pytest

from lee_jax import cli


def test_write_atomically_replaces_only_its_own_file(tmp_path):
  (tmp_path / "r.json.tmp").write_text("a user's")  # the fixed temporary name once used
  cli.write_atomically(tmp_path / "r.json", lambda t: t.write_text("1"))
  cli.write_atomically(tmp_path / "r.json", lambda t: t.write_text("2"))
  assert (tmp_path / "r.json").read_text() == "2"
  assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json", "r.json.tmp"]
  assert (tmp_path / "r.json.tmp").read_text() == "a user's"

  def fails(t):
    t.write_text("half")
    raise OSError("disk full")
  with pytest.raises(OSError, match="disk full"):
    cli.write_atomically(tmp_path / "r.json", fails)
  assert (tmp_path / "r.json").read_text() == "2"  # the old file stays, and no temporary
  assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json", "r.json.tmp"]


def test_output_file_refuses_directories_missing_parents_and_existing_files(tmp_path):
  assert cli.output_file(tmp_path / "r.json") == tmp_path / "r.json"
  with pytest.raises(cli.PathError, match="is a directory, not a file"):
    cli.output_file(tmp_path)
  with pytest.raises(cli.PathError, match="does not exist"):
    cli.output_file(tmp_path / "no" / "r.json")
  (tmp_path / "r.json").write_text("{}")
  assert cli.output_file(tmp_path / "r.json", overwrite=True).exists()
  with pytest.raises(cli.PathError, match="exists; pass --overwrite"):
    cli.output_file(tmp_path / "r.json", overwrite=False, flag="--json")
  assert (tmp_path / "r.json").read_text() == "{}"  # nothing written or removed


def test_output_dir_creates_or_refuses(tmp_path):
  assert cli.output_dir(tmp_path / "a" / "b").is_dir()
  (tmp_path / "f").write_text("x")
  with pytest.raises(cli.PathError, match="exists and is not a directory"):
    cli.output_dir(tmp_path / "f")
  with pytest.raises(cli.PathError, match="cannot create it"):
    cli.output_dir("/proc/lee_jax_test_dir")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes anywhere")
def test_output_dir_not_writable(tmp_path):
  locked = tmp_path / "locked"
  locked.mkdir(mode=0o500)
  with pytest.raises(cli.PathError, match="not writable"):
    cli.output_dir(locked)


def test_run_reports_a_path_error_as_one_line(capsys, monkeypatch):
  monkeypatch.setattr("sys.argv", ["prog"])
  def main(argv):
    cli.output_file("/proc/nope/x.json")
  with pytest.raises(SystemExit) as e:
    cli.run(main)
  assert e.value.code == cli.EXIT_BAD_INPUT
  err = capsys.readouterr().err
  assert err.startswith("error: --out /proc/nope/x.json: directory") and err.count("\n") == 1


def test_run_refuses_a_malformed_cpu_thread_setting_before_main(capsys, monkeypatch):
  # $LEE_JAX_CPU_THREADS is read when worker processes start, deep in a search: every entry
  # point checks it first, as bad input.
  from lee_jax import cpu_threads
  monkeypatch.setattr("sys.argv", ["prog"])
  monkeypatch.setenv(cpu_threads.ENV, "many")
  ran = []
  with pytest.raises(SystemExit) as e:
    cli.run(ran.append)
  assert e.value.code == cli.EXIT_BAD_INPUT and not ran
  err = capsys.readouterr().err
  assert err.startswith(f"error: {cpu_threads.ENV} must be a thread count") and err.count("\n") == 1


def test_run_turns_ctrl_c_into_one_line_and_exit_130(capsys, monkeypatch):
  monkeypatch.setattr("sys.argv", ["prog"])
  def main(argv):
    raise KeyboardInterrupt
  with pytest.raises(SystemExit) as e:
    cli.run(main)
  assert e.value.code == cli.EXIT_INTERRUPTED == 130
  assert capsys.readouterr().err.strip() == "interrupted"


def test_a_folder_the_failed_block_created_goes_only_while_empty(tmp_path):
  for existed, fill, stays in ((False, False, False), (False, True, True), (True, False, True)):
    d = tmp_path / f"d{existed}{fill}"
    if existed:
      d.mkdir()
    with pytest.raises(ValueError):
      with cli.no_empty_dir_left(d):
        d.mkdir(exist_ok=True)
        if fill:
          (d / "checkpoint").write_text("kept")
        raise ValueError("refused")
    assert d.is_dir() == stays


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_help_is_printed_and_exits_0(flag):
  # absl exits 1 after its help (and knows no -h): a script checking `--help` took it as failed
  r = subprocess.run([sys.executable, "-m", "lee_jax.infer", flag], capture_output=True, text=True,
                     timeout=120)
  assert r.returncode == 0, r.stderr
  assert "--dataset" in r.stdout and "Try --helpfull" in r.stdout


def test_a_lone_dash_h_reads_as_help_but_not_as_a_value_or_after_a_double_dash():
  assert cli._help_alias(["p", "-h"]) == ["p", "--help"]
  # after a boolean flag, and after a flag's value given with =
  assert cli._help_alias(["p", "--logtostderr", "-h"]) == ["p", "--logtostderr", "--help"]
  assert cli._help_alias(["p", "--verbosity", "-h"]) == ["p", "--verbosity", "-h"]  # its value
  assert cli._help_alias(["p", "--verbosity=1", "-h"]) == ["p", "--verbosity=1", "--help"]
  assert cli._help_alias(["p", "--", "-h"]) == ["p", "--", "-h"]
