"""The driver: data, rollouts, rewards, advantages, training, weight sync, checkpoints.

One step:
  1. take `train_batch_size` prompts (data.batch_for_step);
  2. each rollout engine replica samples `n_samples_per_prompt` completions for its share,
     from its own copy of the policy, with a generator seeded by (seed, step, engine, replica);
  3. the task scores them; advantages are normalised within each prompt's group;
  4. reference ranks score the sequences when a KL term is used;
  5. every `policy_mini_batch_size` prompts are one optimizer step, their sequences split
     over the policy DP groups, `micro_train_batch_size_per_gpu` sequences per backward;
  6. policy rank 0 puts its weights in the object store; every rollout rank loads them.
"""

from __future__ import annotations

import time
from pathlib import Path

import ray

from rlaunch.clock import Laps
from rlaunch.runtimes.smoke import checkpoint as ckpt
from rlaunch.runtimes.smoke.cluster import Workers, start_workers
from rlaunch.runtimes.smoke.config import SmokeConfig, SmokeConfigError
from rlaunch.runtimes.smoke.data import (
    EVAL_FILE,
    TRAIN_FILE,
    batch_for_step,
    data_position,
    derived_seed,
    read_problems,
    steps_per_epoch,
)
from rlaunch.runtimes.smoke.grpo import group_advantages, split_evenly
from rlaunch.runtimes.smoke.inputs import (
    check_model,
    check_prompts,
    export_contents,
    load_tokenizer,
    refuse_finished_calendar,
    resume_source,
    verify_inputs,
)
from rlaunch.runtimes.smoke.metrics import step_line
from rlaunch.runtimes.smoke.outputs import mean as _mean
from rlaunch.runtimes.smoke.outputs import terminal_manifest
from rlaunch.tasks import countdown


class SmokeRunError(RuntimeError):
    """The run broke an invariant it checks as it goes (e.g. a weight sync that did not land)."""


def _near_even(items: list, parts: int) -> list[list]:
    size, extra = divmod(len(items), parts)
    shares, start = [], 0
    for index in range(parts):
        end = start + size + (1 if index < extra else 0)
        shares.append(items[start:end])
        start = end
    return shares


class SmokeRun:
    def __init__(self, config: SmokeConfig, *, say=print) -> None:
        self.laps = Laps()
        """Where the run's time goes, from here (`__main__` laps the inputs and Ray's
        connection before `run`)."""
        self.config = config
        self.say = say
        refuse_finished_calendar(config)
        verify_inputs(config)
        self.tokenizer = load_tokenizer(config)
        check_model(config, self.tokenizer)
        self.train = read_problems(config.train_dir, TRAIN_FILE, "train_data")
        self.eval = (read_problems(config.eval_dir, EVAL_FILE, "eval_data")
                     if config.eval_dir is not None else [])
        check_prompts(config, self.tokenizer, self.train + self.eval)
        per_epoch = steps_per_epoch(len(self.train), config.train_batch_size)
        if per_epoch == 0:
            raise SmokeConfigError(
                f"{config.train_dir / TRAIN_FILE} has {len(self.train)} rows, fewer than "
                f"train_batch_size {config.train_batch_size}: not one training step"
            )
        total = config.epochs * per_epoch
        if config.max_training_steps is not None:
            total = min(total, config.max_training_steps)
        self.total_steps = total
        self.history: list[dict] = []
        self.evals: dict[str, dict] = {}

    def resume_source(self) -> Path | None:
        return resume_source(self.config)

    # --- the run -------------------------------------------------------------------------

    def run(self, *, metrics, timeout_s: float) -> dict:
        config = self.config
        source = self.resume_source()
        if config.resume_mode == "none":
            removed = ckpt.clear(config.checkpoint_root)
            if removed:
                self.say(f"resume mode none: removed the checkpoints of an earlier attempt "
                         f"(steps {', '.join(map(str, removed))}) from {config.checkpoint_root}")
        config.checkpoint_root.mkdir(parents=True, exist_ok=True)
        ckpt.record_runtime(config.checkpoint_root, runtime_fingerprint=config.runtime_fingerprint,
                            run_fingerprint=config.fingerprint, run_id=config.run_id,
                            exports=export_contents(config))
        started = time.monotonic()
        laps = self.laps
        workers = start_workers(config, timeout_s=timeout_s, say=self.say)
        try:
            start_step = self._restore(workers, source)
            self._sync_weights(workers)
            laps.lap("workers")
            remaining = (f"training steps {start_step + 1}..{self.total_steps}"
                         if start_step < self.total_steps else "no step left to train")
            self.say(f"workers ready in {time.monotonic() - started:.1f} s; {remaining}")
            if self.eval and "initial" not in self.evals:
                self._evaluate(workers, "initial", start_step, metrics)
                laps.lap("evals")
            first_step_at = None
            for step in range(start_step + 1, self.total_steps + 1):
                record = self._step(workers, step)
                if first_step_at is None:
                    first_step_at = time.monotonic() - started
                self.history.append(record)
                metrics.log(record, self._line(record))
                laps.lap("training")
                self._maybe_checkpoint(workers, step)
                laps.lap("checkpoints")
            if self.eval:
                self._evaluate(workers, "final", self.total_steps, metrics)
                laps.lap("evals")
            export_path, weights = self._export(workers)
            laps.lap("export")
        finally:
            workers.stop()
        laps.lap("stopping workers")
        return terminal_manifest(
            self.config, total_steps=self.total_steps, history=self.history, evals=self.evals,
            export_path=export_path, weights_sha256=weights, start_step=start_step,
            time_to_first_step_s=first_step_at, wall_time_s=time.monotonic() - started,
            timings_s=laps.seconds,
        )

    def _line(self, record: dict) -> str:
        return step_line(record, self.total_steps)

    def _restore(self, workers: Workers, source: Path | None) -> int:
        if source is None:
            return 0
        state = ckpt.read_state(source)
        if state.get("policy_world") != self.config.geometry.policy.world:
            raise ckpt.CheckpointError(
                f"{source} was written by {state.get('policy_world')} policy ranks, this plan has "
                f"{self.config.geometry.policy.world}; the smoke runtime does not reshard"
            )
        ray.get([actor.load_checkpoint.remote(str(source)) for actor in workers.policy])
        self.history = list(state.get("history", []))
        self.evals = dict(state.get("evals", {}))
        step = int(state["global_step"])
        self.say(f"resumed from {source} (global step {step}, data position "
                 f"{state.get('data_position')})")
        return step

    def _sync_weights(self, workers: Workers) -> None:
        handle = ray.get(workers.policy[0].publish_weights.remote())
        loaded = ray.get([actor.load_rollout_weights.remote(handle) for actor in workers.rollout])
        stale = [rank for rank, sha in enumerate(loaded) if sha != handle[1]]
        if stale:
            raise SmokeRunError(f"weight sync failed: rollout rank(s) {stale} do not hold the "
                               f"policy weights {handle[1]}")

    def _generate(self, workers: Workers, problems: list[dict], *, n: int, temperature: float,
                  step: int, purpose: str) -> list[list[dict]]:
        """Per problem, `n` samples as dicts with completion ids and text."""
        leaders = workers.engine_leaders
        shares = _near_even(problems, len(leaders))
        futures = [
            actor.generate.remote([p["prompt"] for p in share], n,
                                  derived_seed(self.config.seed, purpose, step, engine, replica),
                                  temperature)
            for (engine, replica, actor), share in zip(leaders, shares, strict=True)
            if share
        ]
        results = iter(ray.get(futures))
        grouped: list[list[dict]] = []
        for share in shares:
            if not share:
                continue
            out = next(results)
            for index in range(len(share)):
                grouped.append([
                    {"completion_ids": out["token_ids"][index * n + j],
                     "text": out["texts"][index * n + j]}
                    for j in range(n)
                ])
        return grouped

    def _step(self, workers: Workers, step: int) -> dict:
        config = self.config
        n = config.n_samples_per_prompt
        began = time.monotonic()
        problems = batch_for_step(self.train, step, seed=config.seed,
                                  train_batch_size=config.train_batch_size)
        grouped = self._generate(workers, problems, n=n, temperature=config.temperature,
                                 step=step, purpose="rollout")
        generated = time.monotonic()
        sequences, rewards = [], []
        for problem, samples in zip(problems, grouped, strict=True):
            prompt_ids = self.tokenizer.encode(problem["prompt"], bos=True)
            for sampled in samples:
                rewards.append(countdown.reward(problem, sampled["text"]))
                sequences.append({"prompt_ids": prompt_ids,
                                  "completion_ids": sampled["completion_ids"]})
        if config.geometry.use_reference:
            shares = _near_even(sequences, len(workers.reference_leaders))
            scored = ray.get([actor.ref_logprobs.remote(share)
                              for actor, share in zip(workers.reference_leaders, shares,
                                                      strict=True) if share])
            ref_rows = [row for part in scored for row in part]
            for sequence, ref in zip(sequences, ref_rows, strict=True):
                sequence["ref_logprobs"] = ref
        shaped = list(rewards)
        if config.use_kl_in_reward:
            shaped = self._kl_shaped(workers, sequences, rewards)
        advantages = group_advantages(shaped, n, estimator=config.estimator,
                                      norm_by_std=config.grpo_norm_by_std)
        for sequence, advantage in zip(sequences, advantages, strict=True):
            sequence["advantage"] = advantage
        train_metrics = self._train(workers, sequences)
        self._sync_weights(workers)
        elapsed = time.monotonic() - began
        tokens = sum(len(s["completion_ids"]) for s in sequences)
        return {
            "step": step,
            "reward_mean": _mean(rewards),
            "solved_fraction": _mean([1.0 if r >= countdown.CORRECT_REWARD else 0.0
                                      for r in rewards]),
            "kl": train_metrics["kl"],
            "policy_loss": train_metrics["policy_loss"],
            "clip_fraction": train_metrics["clip_fraction"],
            "grad_norm": train_metrics["grad_norm"],
            "response_length": tokens / len(sequences),
            "generated_tokens": tokens,
            "tokens_per_s": tokens / elapsed if elapsed > 0 else 0.0,
            "generate_time_s": generated - began,
            "step_time_s": elapsed,
        }

    def _kl_shaped(self, workers: Workers, sequences: list[dict], rewards: list[float]) -> list:
        """reward - kl_loss_coef x sum of per-token k1 KL (policy = rollout copy, fresh weights)."""
        scored = ray.get(workers.policy[0].policy_logprobs.remote(sequences))
        return [
            r - self.config.kl_loss_coef * sum(a - b for a, b in zip(lp, s["ref_logprobs"],
                                                                      strict=True))
            for r, lp, s in zip(rewards, scored, sequences, strict=True)
        ]

    def _train(self, workers: Workers, sequences: list[dict]) -> dict:
        config, geometry = self.config, self.config.geometry
        per_mini = config.policy_mini_batch_size * config.n_samples_per_prompt
        minis = [sequences[start : start + per_mini]
                 for start in range(0, len(sequences), per_mini)]
        split = [split_evenly(mini, geometry.policy_dp) for mini in minis]
        futures = [
            actor.train.remote([parts[workers.dp_index(rank, geometry)] for parts in split])
            for rank, actor in enumerate(workers.policy)
        ]
        results = ray.get(futures)
        return {key: _mean([r[key] for r in results]) for key in results[0]}

    def _evaluate(self, workers: Workers, label: str, step: int, metrics) -> None:
        problems = self.eval[: self.config.eval_batch_size]
        grouped = self._generate(workers, problems, n=1, temperature=0.0, step=step,
                                 purpose="eval")
        rewards = [countdown.reward(p, g[0]["text"]) for p, g in zip(problems, grouped,
                                                                    strict=True)]
        result = {"reward_mean": _mean(rewards),
                  "solved_fraction": _mean([1.0 if r >= countdown.CORRECT_REWARD else 0.0
                                            for r in rewards]),
                  "prompts": len(problems), "step": step}
        self.evals[label] = result
        metrics.log({"eval": label, **result},
                    f"eval ({label}, greedy, {len(problems)} prompts): reward "
                    f"{result['reward_mean']:.3f} (solved {result['solved_fraction']:.2f})")

    def _maybe_checkpoint(self, workers: Workers, step: int) -> None:
        config = self.config
        interval = config.ckpt_interval
        if interval <= 0 or (step % interval and step != self.total_steps):
            return
        root = config.checkpoint_root
        staging = ckpt.staging_dir(root, step)
        ray.get([actor.save_checkpoint.remote(str(staging)) for actor in workers.policy])
        state = {
            "global_step": step,
            "data_position": data_position(step, len(self.train), config.train_batch_size),
            "policy_world": config.geometry.policy.world,
            "seed": config.seed,
            "run_id": config.run_id,
            "fingerprint": config.fingerprint,
            "runtime_fingerprint": config.runtime_fingerprint,
            "history": self.history,
            "evals": self.evals,
        }
        ckpt.commit(root, step, staging, state, keep=config.max_ckpts_to_keep)
        if config.hf_save_interval > 0 and step % config.hf_save_interval == 0:
            ray.get(workers.policy[0].export.remote(
                str(config.export_root / f"global_step_{step}")))

    def _export(self, workers: Workers) -> tuple[Path, str]:
        target = self.config.export_root
        weights = ray.get(workers.policy[0].export.remote(str(target)))
        return target, weights
