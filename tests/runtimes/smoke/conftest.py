"""Shared pieces of the smoke runtime tests: a tiny SFT'd model, a Ray head, a launch YAML."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest

from .smoke_helpers import TINY_DIMS, write_launch


@pytest.fixture(scope="package")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An SFT'd TinyLM (a few seconds of training), copied into every test store."""
    import torch

    from rlaunch.models.sft import sft_train
    from rlaunch.models.tiny import TinyConfig, TinyLM, save_pretrained
    from rlaunch.models.tokenizer import CharTokenizer
    from rlaunch.tasks.countdown import make_problems

    directory = tmp_path_factory.mktemp("tiny-model")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    tokenizer = CharTokenizer()
    model = TinyLM(TinyConfig(vocab_size=tokenizer.vocab_size, **TINY_DIMS))
    sft_train(model, tokenizer, make_problems(0, 500), steps=40, seed=0, batch_size=32)
    save_pretrained(model, tokenizer, directory)
    torch.set_num_threads(threads)
    return directory


@pytest.fixture(scope="package")
def ray_head():
    """A private Ray head for these tests: 2 CPUs, 4 simulated GPUs, no dashboard.

    Package-scoped: started once for this directory (starting Ray dominates the cost of
    these tests) and shut down after it, before any other test of the session runs."""
    import ray

    ray.init(address="local", num_cpus=2, num_gpus=4, include_dashboard=False,
             log_to_driver=False)
    yield ray
    ray.shutdown()


@pytest.fixture(scope="package")
def finished_run(ray_head, tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory):
    """One colocated 1 x 2 run of TINY_SPEC (8 steps, checkpoints every 2), shared by tests:
    (launch path, launch document, exit status, console output)."""
    from rlaunch.runtimes.smoke.__main__ import main

    store = tmp_path_factory.mktemp("store")
    path, document = write_launch(store, tiny_model_dir)
    console = io.StringIO()
    with contextlib.redirect_stdout(console):
        status = main([str(path)])
    return path, document, status, console.getvalue()
