import dataclasses
import json
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

from flax import nnx
import jax
import numpy as np
import optax
import pytest

from lee_jax import checkpoints, configs, metrics_log, pipeline, trainer as train
from lee_jax import model as model_lib

TINY = configs.get_model_config("tiny", dtype="float32")


def _cfg(workdir, steps=2, **kw):
  return train.TrainConfig(model="tiny", model_cfg=TINY, workdir=pathlib.Path(workdir),
                           batch_size=4, steps=(steps,) * 5, warmup=1, log_every=1,
                           save_every=1, **kw)


def _params(workdir, export="export"):
  abstract = nnx.state(nnx.eval_shape(lambda: model_lib.LEE(TINY, rngs=nnx.Rngs(0))), nnx.Param)
  return checkpoints.load_params(pathlib.Path(workdir) / export, abstract, {"model": "tiny"})


@pytest.mark.slow
def test_an_earlier_phase_run_again_leaves_the_later_phases_export(tmp_path, capsys):
  # phases 1-5 done, then phase 1 again with more steps: export/ ("the latest phase") became
  # phase 1's, and --checkpoint WORKDIR quietly used it; export_phase1 takes the new one
  (tmp_path / "export_phase5").mkdir()
  (tmp_path / "export").mkdir()
  (tmp_path / "export" / "meta.json").write_text('{"phase": 5}')
  assert train.train_phase(_cfg(tmp_path, init="scratch"), phase=1)["finished"]
  assert json.loads((tmp_path / "export" / "meta.json").read_text()) == {"phase": 5}
  assert json.loads((tmp_path / "export_phase1" / "meta.json").read_text())["phase"] == 1
  assert f"inference params in {tmp_path / 'export_phase1'} ({tmp_path / 'export'} keeps " \
      "phase 5's" in capsys.readouterr().out
  # a workdir whose first phase stopped: its params are named, not "holds no model"
  (tmp_path / "partial" / "export_partial").mkdir(parents=True)
  (tmp_path / "partial" / "export_partial" / "meta.json").write_text("{}")
  with pytest.raises(checkpoints.CheckpointError, match="has no finished phase yet; its "
                     "unfinished phase's params are in .*export_partial"):
    checkpoints.read_model_meta(checkpoints.model_dir(tmp_path / "partial") / "meta.json")


def test_phase4_trains_encoder_only(tmp_path):
  init = nnx.state(model_lib.LEE(TINY, rngs=nnx.Rngs(0)), nnx.Param)
  out = train.train_phase(_cfg(tmp_path, init="scratch"), phase=4)
  assert out["finished"] and out["step"] == 2
  after = _params(tmp_path)
  for name in ("expr_decoder", "eval_decoder"):
    for a, b in zip(jax.tree.leaves(init[name]), jax.tree.leaves(after[name])):
      np.testing.assert_array_equal(a, b)
  changed = [not np.array_equal(a, b) for a, b in
             zip(jax.tree.leaves(init["encoder"]), jax.tree.leaves(after["encoder"]))]
  assert any(changed)
  records = metrics_log.read(tmp_path / "metrics.jsonl")
  assert [r["step"] for r in records] == [1, 2] and "align" in records[0] and "expr" not in records[0]


def test_fused_refine_and_rbg_keys_run_phase_3_as_asked(tmp_path, capsys):
  # `on` batches L_refine's passes (the same terms: test_losses; `auto`: test_model); rbg
  # keys draw the dropout and corruption masks (one run for both: a phase-3 step compiles
  # in 25-45 s on 2 cores).
  out = train.train_phase(_cfg(tmp_path, init="scratch", fused_refine="on", rng_impl="rbg"),
                          phase=3)
  assert out["finished"] and "refine passes fused" in capsys.readouterr().out
  last = metrics_log.read(tmp_path / "metrics.jsonl")[-1]
  assert np.isfinite(last["loss"]) and "refine" in last
  with pytest.raises(train.TrainError, match="--fused_refine must be one of"):
    _cfg(tmp_path, fused_refine="yes")


def test_step_key_per_step_and_per_prng():
  key = jax.random.key(7)
  draw = lambda k: np.asarray(jax.random.bernoulli(k, 0.9, (4096,)))  # noqa: E731
  for impl in configs.RNG_IMPLS:
    a, again, b = (train.step_key(key, i, impl) for i in (3, 3, 4))
    # a step's draws depend on the step only (a resumed run repeats them); the next differs
    np.testing.assert_array_equal(draw(a), draw(again))
    assert not np.array_equal(draw(a), draw(b))
    assert abs(draw(a).mean() - 0.9) < 0.02  # dropout's keep rate either way
  # rbg keys are another generator: other masks from the same key and step; auto is
  # threefry on this CPU (the tests' draws do not change)
  assert not np.array_equal(draw(train.step_key(key, 3)), draw(train.step_key(key, 3, "rbg")))
  np.testing.assert_array_equal(draw(train.step_key(key, 3)),
                                draw(train.step_key(key, 3, "threefry")))
  with pytest.raises(ValueError, match="rng_impl must be one of"):
    train.step_key(key, 3, "philox")


def test_exported_params_load_back_exactly(tmp_path):
  # every array equal, so every output equal (running the model eagerly here compiled ~330
  # programs, 23 s on 2 cores, to show the same)
  model = model_lib.LEE(TINY, rngs=nnx.Rngs(3))
  checkpoints.export_params(tmp_path, nnx.state(model, nnx.Param), {"model": "tiny"})
  fresh = model_lib.LEE(TINY, rngs=nnx.Rngs(4))
  nnx.update(fresh, checkpoints.load_params(tmp_path, checkpoints.abstract(nnx.state(fresh, nnx.Param)),
                                            {"model": "tiny"}))
  want = jax.tree.leaves_with_path(nnx.state(model, nnx.Param))
  got = jax.tree.leaves_with_path(nnx.state(fresh, nnx.Param))
  assert [p for p, _ in got] == [p for p, _ in want] and len(want) > 100
  for (_, a), (_, b) in zip(want, got):
    assert a.dtype == b.dtype
    np.testing.assert_array_equal(a, b)


def test_wrong_model_and_corrupt_checkpoints_are_one_line_errors(tmp_path):
  model = model_lib.LEE(TINY, rngs=nnx.Rngs(3))
  params = nnx.state(model, nnx.Param)
  checkpoints.export_params(tmp_path, params, {"model": "tiny",
                                               "model_config": {"use_vae": True, "d_z": 32}})
  with pytest.raises(checkpoints.CheckpointError, match=r"meta.json was saved with model='tiny'"):
    checkpoints.load_params(tmp_path, checkpoints.abstract(params), {"model": "small"})
  # of two settings dicts, only the entry that differs (once both whole dicts)
  with pytest.raises(checkpoints.CheckpointError,
                     match=r"saved with model_config.use_vae=True, not False; use another"):
    checkpoints.load_params(tmp_path, checkpoints.abstract(params),
                            {"model_config": {"use_vae": False, "d_z": 32}})
  for f in (tmp_path / "params").rglob("*"):
    if f.is_file() and f.stat().st_size > 100:
      f.write_bytes(f.read_bytes()[:50])  # truncate every data file
  with pytest.raises(checkpoints.CheckpointError, match=str(tmp_path / "params")) as e:
    checkpoints.load_params(tmp_path, checkpoints.abstract(params), {"model": "tiny"})
  assert "\n" not in str(e.value)


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(),
                    reason="signal handlers are set in the main thread only")
def test_a_first_signal_asks_the_loop_to_stop_and_a_second_stops_at_once():
  before = signal.getsignal(signal.SIGINT)
  with train.StopRequest() as stop:
    assert stop.signal is None
    os.kill(os.getpid(), signal.SIGTERM)  # a cluster's preemption notice
    time.sleep(0.05)  # (the handler runs between bytecodes)
    assert stop.signal == "SIGTERM"
    with pytest.raises(KeyboardInterrupt):
      os.kill(os.getpid(), signal.SIGINT)
      time.sleep(0.05)
  assert signal.getsignal(signal.SIGINT) is before


@pytest.mark.slow
def test_cli_ctrl_c_saves_at_that_step_and_exits_130(tmp_path):
  env = dict(os.environ, JAX_PLATFORMS="cpu")
  run = tmp_path / "run"
  proc = subprocess.Popen(_cli(run, "--phase=1", "--steps=100000", "--save_every=1000"), env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
  # (the loop sets its own SIGINT handler, so an ignored SIGINT inherited from a background
  # job does not hide it; a preexec_fn would fork this multithreaded JAX process)
  deadline = time.time() + 240
  while time.time() < deadline and not (run / "metrics.jsonl").is_file():
    time.sleep(0.2)  # (the first step has run: compiled)
  proc.send_signal(signal.SIGINT)
  out, err = proc.communicate(timeout=240)
  assert proc.returncode == 130, out + err
  assert "Traceback" not in err and "SIGINT: saving after this step" in err
  step = int(re.search(r"stopped by SIGINT at step (\d+); the same command resumes", out)[1])
  # saved where it stopped, not only at the last interval (--save_every=1000)
  assert max(int(p.name) for p in (run / "phase1").iterdir() if p.name.isdigit()) == step
  assert (run / "export_partial" / "meta.json").is_file()


def _cli(workdir, *args):
  return [sys.executable, "-m", "lee_jax.train", "--model=tiny", "--dtype=float32",
          f"--workdir={workdir}", "--batch_size=4", "--log_every=1", "--save_every=3", *args]


@pytest.mark.slow
def test_cli_killed_run_resumes_exactly(tmp_path):
  # Three training processes: the later two load the compiled step from the test session's
  # compilation cache (conftest).
  env = dict(os.environ, JAX_PLATFORMS="cpu")
  steps = 15
  run = tmp_path / "run"
  proc = subprocess.Popen(_cli(run, "--phase=1", f"--steps={steps}"), env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
  phase1 = run / "phase1"
  deadline = time.time() + 240
  while time.time() < deadline and not (phase1 / "6").is_dir():
    time.sleep(0.2)
  time.sleep(np.random.default_rng().uniform(0, 0.5))  # a random moment after the 2nd save
  os.kill(proc.pid, signal.SIGKILL)  # no chance to save or clean up
  proc.wait()
  saved = max(int(p.name) for p in phase1.iterdir() if p.name.isdigit())
  assert 6 <= saved < steps
  r = subprocess.run(_cli(run, "--phase=1", f"--steps={steps}"), env=env,
                     capture_output=True, text=True, timeout=600)
  assert r.returncode == 0, r.stdout + r.stderr
  assert f"resumed from {phase1 / str(saved)}" in r.stdout
  resumed = [rec for rec in metrics_log.read(run / "metrics.jsonl")]
  after = [rec["step"] for rec in resumed if rec["step"] > saved]
  assert after[-(steps - saved):] == list(range(saved + 1, steps + 1))
  # The same phase without the kill gives the same losses after the resume point.
  ref = subprocess.run(_cli(tmp_path / "ref", "--phase=1", f"--steps={steps}", "--save_every=100"), env=env,
                       capture_output=True, text=True, timeout=600)
  assert ref.returncode == 0, ref.stdout + ref.stderr
  want = {rec["step"]: rec["loss"] for rec in metrics_log.read(tmp_path / "ref" / "metrics.jsonl")}
  got = {rec["step"]: rec["loss"] for rec in resumed[-(steps - saved):]}
  for step in (saved + 1, saved + 2, steps):
    np.testing.assert_allclose(got[step], want[step], rtol=1e-4)
  # (phase 2 from phase 1, in process: test_phase2_starts_from_phase1...; a CLI phase 2
  # here compiled one more step, ~45 s on 2 cores)
  meta = json.loads((run / "export_phase1" / "meta.json").read_text())
  assert meta["phase"] == 1 and meta["step"] == steps
  assert meta["model_config"]["attention_impl"] is None  # --attention is not stored


@pytest.mark.slow
def test_cli_trains_a_no_vae_model_for_the_vae_ablation(tmp_path):
  r = subprocess.run(_cli(tmp_path, "--phase=1", "--steps=1", "--use_vae=false"),
                     env=dict(os.environ, JAX_PLATFORMS="cpu"), capture_output=True, text=True,
                     timeout=600)
  assert r.returncode == 0, r.stdout + r.stderr
  meta = json.loads((tmp_path / "export" / "meta.json").read_text())
  assert meta["model_config"]["use_vae"] is False


def test_non_finite_loss_keeps_the_last_finite_checkpoint(tmp_path, monkeypatch):
  # It saved the NaN weights as the latest step (a resume restored them), and the error
  # ended the process while Orbax still wrote them: the folder held 4.orbax-checkpoint-tmp.
  make = train.make_train_step

  def poisoned(*args, **kw):
    step_fn = make(*args, **kw)

    def run(trainable, opt_state, frozen, rest, batch, key, i):
      trainable, opt_state, metrics = step_fn(trainable, opt_state, frozen, rest, batch, key, i)
      if int(i) >= 2:  # the third step
        trainable = jax.tree.map(lambda p: p * np.nan, trainable)
      return trainable, opt_state, metrics
    return run

  monkeypatch.setattr(train, "make_train_step", poisoned)
  with pytest.raises(train.TrainError, match=r"non-finite loss at phase 1 step 3 .*the last "
                     r"checkpoint, step 2, is kept in .*phase1 \(a resume meets the same"):
    train.train_phase(_cfg(tmp_path, steps=6), phase=1)
  assert sorted(p.name for p in (tmp_path / "phase1").iterdir()) == ["1", "2"]


def test_no_vae_model_skips_phase_4(tmp_path):
  # Phase 4's align-only weights leave the no-VAE model its ||z||^2 penalty alone, which
  # pulled z to 0 (the shipped no-VAE tiny: token accuracy 0.63 -> 0.23 in 200 steps).
  novae = dataclasses.replace(_cfg(tmp_path), model_cfg=dataclasses.replace(TINY, use_vae=False))
  assert configs.phases(False) == (1, 2, 3, 5) and configs.phases(True) == (1, 2, 3, 4, 5)
  with pytest.raises(train.TrainError, match="phase 4 is Table 7's align phase, and the no-VAE model"):
    train.train_phase(novae, phase=4)
  with pytest.raises(train.TrainError, match="phase 4 is Table 7's align phase"):
    train.train_phase(dataclasses.replace(novae, phase4_expr=1.0), phase=4)
  with pytest.raises(train.TrainError, match=r"starts from phase 3's checkpoint.*--phase=3 "):
    train.train_phase(novae, phase=5)
  r = subprocess.run(_cli(tmp_path / "new", "--phase=4", "--use_vae=false"),
                     capture_output=True, text=True, timeout=120)
  assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
  assert "skip it; phase 5 starts from phase 3" in r.stderr
  assert not (tmp_path / "new").exists()


def test_a_second_run_on_a_busy_workdir_is_refused(tmp_path):
  # It started, then died at its first save with Orbax's tracebacks (or the two runs'
  # checkpoints mixed).
  from lee_jax import cli
  run = tmp_path / "run"
  run.mkdir()
  with cli.exclusive(run, "training run"):
    r = subprocess.run(_cli(run, "--phase=1", "--steps=1"), capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert f"{run} is in use by another training run" in r.stderr
    with pytest.raises(cli.PathError, match="in use"):
      with cli.exclusive(run, "training run"):
        pass
  assert list(run.iterdir()) == []  # the lock leaves no file
  with cli.exclusive(run, "training run"):  # released with its holder
    pass


def test_cli_missing_previous_phase_is_one_line_error(tmp_path):
  r = subprocess.run(_cli(tmp_path / "new", "--phase=3"), capture_output=True, text=True,
                     timeout=120)
  assert r.returncode == 2
  assert "--phase=2" in r.stderr and r.stderr.count("\n") == 1
  assert not (tmp_path / "new").exists()  # a run refused at its start leaves no workdir


@pytest.mark.parametrize("kw,needle", [
    ({"lr": -1e-3}, "--min_lr <= --lr"), ({"min_lr": 1.0}, "--min_lr <= --lr"),
    ({"warmup": -1}, "--warmup"), ({"weight_decay": -0.1}, "--weight_decay"),
    ({"clip_norm": 0.0}, "--clip_norm"), ({"workers": -2}, "--workers"),
    ({"rng_impl": "philox"}, "--rng_impl must be one of"),
    # inf passed `min_lr <= lr` (the run failed at step 1); grain's seeding raised a traceback
    ({"lr": float("inf")}, "--lr must be a finite number, got inf"),
    ({"max_seconds": float("nan")}, "--max_seconds must be a finite number"),
    ({"seed": -1}, r"--seed must be in \[0, 2\*\*32\), got -1"),
])
def test_settings_that_would_train_the_wrong_way_are_refused(tmp_path, kw, needle):
  with pytest.raises(train.TrainError, match=needle):
    dataclasses.replace(_cfg(tmp_path), **kw)


def test_cli_unwritable_workdir_is_one_line_error(tmp_path):
  blocker = tmp_path / "file"
  blocker.write_text("not a directory")
  r = subprocess.run(_cli(blocker / "run", "--phase=1", "--init=scratch"), capture_output=True,
                     text=True, timeout=120)
  assert r.returncode == 2
  assert "cannot write to --workdir" in r.stderr and r.stderr.count("\n") == 1
  assert blocker.read_text() == "not a directory"


@pytest.mark.parametrize("args,needle", [
    (["--workdir="], "--workdir is empty"),  # once: phase folders in the current directory
    (["--save_every=0"], "--save_every must be >= 1, got 0"),  # once quietly 1
    (["--log_every=-1"], "--log_every must be >= 1, got -1"),
    (["--keep=0"], "--keep must be >= 1, got 0"),
    (["--phase4_expr=-1"], "--phase4_expr must be a number >= 0, got -1"),
])
def test_cli_flags_that_were_quietly_changed_are_refused(tmp_path, args, needle):
  r = subprocess.run(_cli(tmp_path / "run", "--phase=1", *args), capture_output=True, text=True,
                     timeout=120, cwd=tmp_path)
  assert r.returncode == 2 and needle in r.stderr and r.stderr.count("\n") == 1, r.stderr
  assert list(tmp_path.iterdir()) == []  # nothing written, here or in the workdir


def test_single_process_does_not_start_distributed(monkeypatch):
  from lee_jax import sharding
  for var in ("JAX_COORDINATOR_ADDRESS", "SLURM_NTASKS", "OMPI_COMM_WORLD_SIZE"):
    monkeypatch.delenv(var, raising=False)
  assert sharding.initialize_distributed() is False
  monkeypatch.setenv("SLURM_NTASKS", "1")
  assert sharding.initialize_distributed() is False and not sharding.in_cluster()
  monkeypatch.setenv("SLURM_NTASKS", "4")  # (a 4-task job: initialize_distributed would start it)
  assert sharding.in_cluster()
  mesh = sharding.mesh()
  assert mesh.shape["data"] == jax.device_count() == 2  # conftest simulates 2 CPU devices
  # an explicit coordinator wins over a 1-task wrapper (it trained alone inside `salloc -n1`)
  monkeypatch.setenv("SLURM_NTASKS", "1")
  monkeypatch.setenv("JAX_COORDINATOR_ADDRESS", "10.0.0.1:1234")
  assert sharding.in_cluster()
  for env, needle in (({}, "JAX_NUM_PROCESSES, JAX_PROCESS_ID missing"),
                      ({"JAX_NUM_PROCESSES": "two", "JAX_PROCESS_ID": "0"}, "must be integers"),
                      ({"JAX_NUM_PROCESSES": "2", "JAX_PROCESS_ID": "2"}, "got 2 of 2")):
    for var, value in env.items():
      monkeypatch.setenv(var, value)
    with pytest.raises(sharding.ClusterError, match=needle):  # a KeyError traceback before
      sharding.initialize_distributed()
  monkeypatch.setenv("JAX_PROCESS_ID", "1")
  assert sharding.explicit_launch() == ("10.0.0.1:1234", 2, 1)


@pytest.mark.slow
def test_init_from_shipped_style_weights(tmp_path):
  from lee_jax import weights

  src = model_lib.LEE(TINY, rngs=nnx.Rngs(7))
  weights.export(src, tmp_path / "w", "tiny", extra={"search_defaults": {"latent_noise": 3}})
  # One step, stopped by the deadline: the warm-up's first rate is 0 (test_anneal...), so it
  # cannot move the params and the partial export must equal the source. (The deadline
  # test's settings: the same compiled step.)
  train.train_phase(_cfg(tmp_path / "run", init_from=str(tmp_path / "w")), 1, deadline=0.0)
  got = jax.tree.leaves(_params(tmp_path / "run", "export_partial"))
  want = jax.tree.leaves(nnx.state(src, nnx.Param))
  assert len(got) == len(want)
  for a, b in zip(got, want):
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
  # the model's search defaults travel on with it (the seventh lease's export had lost them)
  assert weights.search_defaults(tmp_path / "run" / "export_partial") == {"latent_noise": 3.0}
  other = model_lib.LEE(configs.get_model_config("tiny", enc_dim=32, dtype="float32"), rngs=nnx.Rngs(0))
  weights.export(other, tmp_path / "other", "tiny")
  with pytest.raises(train.TrainError, match="different architecture"):
    train.train_phase(_cfg(tmp_path / "run2", steps=1, init_from=str(tmp_path / "other")), 1)


def test_align_scale_scales_phase_2_align_weight(tmp_path):
  assert train.phase_weights(_cfg(tmp_path), 2).align == 2.0
  assert train.phase_weights(_cfg(tmp_path, align_scale=0.25), 4).align == 1.25
  # a zero weight leaves the term out of the step: test_losses' skip-zero test (a training
  # run here compiled another phase-2 step, ~45 s on 2 cores)
  assert train.phase_weights(_cfg(tmp_path, align_scale=0.0), 2).align == 0.0


def test_phase4_expr_keeps_l_expr_in_phase_4_only(tmp_path):
  assert train.phase_weights(_cfg(tmp_path), 4).expr == 0.0  # Table 7
  cfg = _cfg(tmp_path, phase4_expr=1.0)
  assert train.phase_weights(cfg, 4).expr == 1.0
  assert train.phase_weights(cfg, 4).align == configs.PHASES[4].weights.align
  for phase in (1, 2, 3, 5):
    assert train.phase_weights(cfg, phase) == train.phase_weights(_cfg(tmp_path), phase)
  assert configs.PHASES[4].trainable == ("encoder",)  # the decoders stay frozen


def test_ema_target_tracks_the_updated_params():
  tx = train.optimizer(_cfg("/tmp/unused", align_ema=0.75), steps=10, ema=True)
  params = {"w": jax.numpy.ones(3)}
  state = tx.init(params)
  np.testing.assert_array_equal(state[-1].params["w"], np.ones(3))
  grads = {"w": jax.numpy.array([1.0, -1.0, 0.0])}
  updates, state = tx.update(grads, state, params)
  new = params["w"] + updates["w"]
  np.testing.assert_allclose(state[-1].params["w"], 0.75 * 1.0 + 0.25 * new, rtol=1e-6)
  assert len(train.optimizer(_cfg("/tmp/unused"), steps=10)) == 2  # no copy unless asked


def test_phase_uses_ema_target_only_where_align_trains_q():
  cfg = _cfg("/tmp/unused")
  assert not train.uses_ema_target(cfg, train.phase_weights(cfg, 1))  # no align in phase 1
  assert train.uses_ema_target(cfg, train.phase_weights(cfg, 2))
  for other in (dict(align_target="online"), dict(align_direction="p_to_q")):
    c = _cfg("/tmp/unused", **other)
    assert not train.uses_ema_target(c, train.phase_weights(c, 2))
  with pytest.raises(train.TrainError, match="align_ema"):
    _cfg("/tmp/unused", align_ema=1.0)
  with pytest.raises(train.TrainError, match="align target"):
    _cfg("/tmp/unused", align_target="target_net")


@pytest.mark.slow
def test_phase2_starts_from_phase1_resumes_with_its_ema_target_and_records_it(
    tmp_path, monkeypatch, capsys):
  # Phase 1 with the deadline test's settings (the same compiled step), then phase 2 from it.
  assert train.train_phase(_cfg(tmp_path, init="scratch"), phase=1)["finished"]
  cfg = dataclasses.replace(_cfg(tmp_path), steps=(2, 3, 3, 3, 3))
  # A copy of phase 1's checkpoints without its final export: phase 1 stopped unfinished
  other = tmp_path / "unfinished"
  shutil.copytree(tmp_path / "phase1", other / "phase1")
  train.train_phase(dataclasses.replace(cfg, workdir=other), phase=2, deadline=0.0)
  assert (f"initialised from {other / 'phase1'} step 2 (phase 1 stopped there unfinished: "
          "`--phase=1` with its flags finishes it)" in capsys.readouterr().out)
  # Phase 1 finished at its 2 steps; this run's 3 for every phase do not make it short of them
  out = train.train_phase(dataclasses.replace(cfg, steps=(3, 3, 3, 3, 3)), phase=2, deadline=0.0)
  assert not out["finished"] and np.isfinite(out["align"])  # stopped after step 1
  assert f"initialised from {tmp_path / 'phase1'} step 2\n" in capsys.readouterr().out
  # resumes step 1 -> 3, EMA copy restored from the checkpoint; --init_from is said unused
  out = train.train_phase(dataclasses.replace(cfg, init_from=str(tmp_path / "export_phase1")),
                          phase=2)
  assert out["finished"] and out["step"] == 3
  assert "phase 2: --init_from is not used: the phase resumes its own checkpoint" in \
      capsys.readouterr().out
  meta = json.loads((tmp_path / "export_phase2" / "meta.json").read_text())
  assert meta["align_target"] == {"kind": "ema", "decay": 0.99}
  # the phase's loss weights as trained (align_scale acts through them: test_align_scale...)
  assert meta["loss_weights"] == dataclasses.asdict(train.phase_weights(cfg, 2))
  # Each finished phase also keeps its own export (phase 2 can be worse than phase 1).
  for phase, step in ((1, 2), (2, 3)):
    meta = json.loads((tmp_path / f"export_phase{phase}" / "meta.json").read_text())
    assert meta["phase"] == phase and meta["step"] == step
  records = metrics_log.read(tmp_path / "metrics.jsonl")
  assert all(0.0 <= r["val_scatter_acc"] <= 1.0 and r["val_align"] >= 0.0 for r in records)

  # p_to_q keeps no EMA copy, so its optimizer state has another structure: resuming this
  # workdir with it names the setting (not orbax's tree mismatch), and stops the data workers
  closed = []

  class Recording:
    def __init__(self, it):
      self.it = iter(it)

    def __iter__(self):
      return self

    def __next__(self):
      return next(self.it)

    def __getattr__(self, name):
      return getattr(self.it, name)

    def close(self):
      closed.append(True)

  real = pipeline.batches
  monkeypatch.setattr(train.pipeline, "batches", lambda *a, **k: Recording(real(*a, **k)))
  with pytest.raises(checkpoints.CheckpointError, match=r"align_target.kind='ema', not 'online'") as e:
    train.train_phase(dataclasses.replace(cfg, steps=(2, 4, 3, 3, 3), align_direction="p_to_q"), phase=2)
  assert "\n" not in str(e.value) and closed


@pytest.mark.slow
def test_deadline_stops_with_a_resumable_checkpoint_and_a_partial_export(tmp_path):
  out = train.train_phase(_cfg(tmp_path, init="scratch"), phase=1, deadline=0.0)
  assert not out["finished"] and out["step"] == 1
  assert (tmp_path / "phase1" / "1").is_dir()  # the checkpoint the same command resumes from
  meta = json.loads((tmp_path / "export_partial" / "meta.json").read_text())
  assert meta["phase"] == 1 and meta["step"] == 1 and meta["finished"] is False
  model = checkpoints.load_model(tmp_path / "export_partial")
  assert model_lib.count_params(model) > 0
  assert not (tmp_path / "export").exists()  # export/ means a finished phase
  # another seed reads another data stream from the saved position: it resumed silently
  with pytest.raises(checkpoints.CheckpointError, match=r"data.seed=0, not 5; use another"):
    train.train_phase(_cfg(tmp_path, init="scratch", seed=5), phase=1)
  assert meta["data"] == {"seed": 0, "batch_size": 4}
  out = train.train_phase(_cfg(tmp_path, init="scratch"), phase=1)  # resumes, ends
  assert out["finished"] and out["step"] == 2
  assert (tmp_path / "export" / "meta.json").is_file() and not (tmp_path / "export_partial").exists()
  # --noresume over an earlier run's checkpoints is refused, and deletes nothing (here, not
  # in a test of its own: the same compiled step)
  saved = sorted(p.name for p in (tmp_path / "phase1").iterdir())
  with pytest.raises(train.TrainError, match="holds checkpoints of an earlier run"):
    train.train_phase(_cfg(tmp_path, init="scratch", resume=False), phase=1)
  assert sorted(p.name for p in (tmp_path / "phase1").iterdir()) == saved


def test_deadline_lr_is_the_schedule_or_further_along_in_time():
  cfg = dataclasses.replace(_cfg("/tmp/unused", anneal_by_deadline=True, max_seconds=60),
                            warmup=10)
  steps = 200
  schedule = optax.warmup_cosine_decay_schedule(0.0, cfg.lr, 10, steps, end_value=cfg.min_lr)
  for step in (0, 5, 10, 57, 120, 199):  # no time spent: the step schedule, as optimizer()'s
    assert train.deadline_lr(cfg, step, steps, 0.0) == pytest.approx(float(schedule(step)), rel=1e-5)
  assert train.deadline_lr(cfg, 57, steps, 1.0) == pytest.approx(cfg.min_lr)  # at the deadline
  half = train.deadline_lr(cfg, 20, steps, 0.5)  # time ahead of the steps: the time decides
  assert half == pytest.approx((cfg.lr + cfg.min_lr) / 2)
  assert train.deadline_lr(cfg, 190, steps, 0.5) == pytest.approx(float(schedule(190)), rel=1e-5)
  with pytest.raises(train.TrainError, match="needs --max_seconds"):
    _cfg("/tmp/unused", anneal_by_deadline=True)


def test_anneal_by_deadline_runs_logs_its_rate_and_resumes_only_with_the_flag(tmp_path):
  cfg = _cfg(tmp_path, steps=4, init="scratch", anneal_by_deadline=True, max_seconds=600)
  out = train.train_phase(dataclasses.replace(cfg, steps=(2,) * 5), phase=1)
  assert out["finished"]
  lrs = [r["lr"] for r in metrics_log.read(tmp_path / "metrics.jsonl")]
  assert lrs[0] == 0.0 and lrs[1] > 0  # warm-up from 0, then the cosine (set every step)
  meta = json.loads((tmp_path / "export" / "meta.json").read_text())
  assert meta["lr_schedule"] == "deadline"
  # More steps resume the phase's checkpoint: with the flag they go on, without it the
  # optimizer state differs and the mismatch is a one-line error that names the setting.
  with pytest.raises(checkpoints.CheckpointError, match="lr_schedule"):
    train.train_phase(_cfg(tmp_path, steps=4), phase=1)
  assert train.train_phase(cfg, phase=1)["step"] == 4
