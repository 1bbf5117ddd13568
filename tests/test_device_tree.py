"""experiments/device_tree.sh: hiding the recorded results from a device call's tree."""
import pathlib
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]


@pytest.mark.skipif(shutil.which("git") is None or not (ROOT / ".git").exists(),
                    reason="needs a git checkout")
def test_hide_and_show_leave_the_checkout_as_it_was(tmp_path):
  repo = tmp_path / "repo"
  subprocess.run(["git", "clone", "-q", "--depth", "1", f"file://{ROOT}", str(repo)], check=True)
  git = lambda *a: subprocess.run(["git", *a], cwd=repo, capture_output=True, text=True,
                                  check=True).stdout
  run = lambda verb: subprocess.run(["bash", "experiments/device_tree.sh", verb], cwd=repo,
                                    capture_output=True, text=True, check=True).stdout
  mib = lambda out: float(out.split("= ")[1].split(" MiB")[0])
  before, tracked = mib(run("size")), git("ls-files")
  hidden = run("hide")
  # the results no longer travel (the tree was ~62 of the call's 64 MiB), and stay on disk
  assert mib(hidden) < before - 10 and "commit nothing until" in hidden
  assert "experiments/results" not in git("ls-files") and not git("status", "--short",
                                                                    "--untracked-files=all",
                                                                    "experiments/results").count("??")
  assert (repo / "experiments/results/README.md").is_file()
  run("show")
  assert git("ls-files") == tracked and git("status", "--short") == ""
  assert mib(run("size")) == before
