"""The training cache (course_utils/models/training_cache.py): a stored training is the same as a fresh one,
and anything that could change the result trains again."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from course_utils.models import training_cache
from course_utils.models.head_task import HeadsModel, NeighbourCountTask, train_heads_model
from course_utils.models.recall_task import RecallAttention, train_recall
from course_utils.models.seq2seq import Seq2SeqWithAttention
from course_utils.models.seq2seq_data import make_reversal_data
from course_utils.models.seq2seq_training import train_seq2seq


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv(training_cache.ENV, str(tmp_path))
    monkeypatch.setattr(training_cache, "enabled_in_this_process", True)
    return tmp_path


def _seq2seq_run(lr=3e-3, data_seed=1, init_seed=0, epochs=2, draw_before=0):
    torch.manual_seed(init_seed)
    model = Seq2SeqWithAttention(12, emb_dim=8, hidden_dim=8, attn_dim=8)
    data = make_reversal_data(200, 3, 6, seed=data_seed)
    torch.rand(draw_before)  # the same model and data, another global random state at the start
    seen = []

    def after_epoch(epoch, m):
        m.eval()
        seen.append((epoch, m.training, [p.detach().clone() for p in m.parameters()], torch.rand(2)))

    history = train_seq2seq(model, data, epochs=epochs, lr=lr, on_epoch_end=after_epoch)
    return model, history, seen, torch.rand(3)


def _same_run(a, b) -> bool:
    (m1, h1, seen1, after1), (m2, h2, seen2, after2) = a, b
    return (h1.step_losses == h2.step_losses and h1.epoch_losses == h2.epoch_losses
            and all(torch.equal(p, q) for p, q in zip(m1.parameters(), m2.parameters()))
            and m1.training == m2.training
            and [(e, t) for e, t, _, _ in seen1] == [(e, t) for e, t, _, _ in seen2]
            and all(torch.equal(p, q) for s1, s2 in zip(seen1, seen2) for p, q in zip(s1[2], s2[2]))
            and all(torch.equal(s1[3], s2[3]) for s1, s2 in zip(seen1, seen2))
            and torch.equal(after1, after2))


def test_a_stored_training_replays_exactly_what_a_fresh_one_gives(cache):
    first = _seq2seq_run()
    assert len(list(cache.glob("*.pt"))) == 1
    second = _seq2seq_run()  # loaded: the callback sees the weights of each epoch, the RNG continues alike
    assert _same_run(first, second)
    training_cache.enabled_in_this_process = False
    fresh = _seq2seq_run()  # and both equal a training with no cache at all
    assert _same_run(first, fresh)
    assert len(list(cache.glob("*.pt"))) == 1


def test_a_stored_training_is_loaded_not_run(cache, monkeypatch):
    _seq2seq_run()
    monkeypatch.setattr(torch.optim.Adam, "step", lambda *a, **k: pytest.fail("trained again"))
    _seq2seq_run()


@pytest.mark.parametrize("change", ["lr", "data", "initial weights", "epochs", "global random state", "math path"])
def test_anything_that_changes_the_result_trains_again(cache, monkeypatch, change):
    _seq2seq_run()
    if change == "lr":
        _seq2seq_run(lr=2e-3)
    elif change == "data":
        _seq2seq_run(data_seed=2)
    elif change == "initial weights":
        _seq2seq_run(init_seed=1)
    elif change == "epochs":
        _seq2seq_run(epochs=1)
    elif change == "global random state":
        _seq2seq_run(draw_before=1)
    else:
        monkeypatch.setenv("MKL_CBWR", "COMPATIBLE")
        _seq2seq_run()
    assert len(list(cache.glob("*.pt"))) == 2, change


def test_what_the_training_printed_is_printed_again(cache, capsys):
    def run():
        torch.manual_seed(0)
        model = HeadsModel(NeighbourCountTask(length=8), d_model=16, num_heads=2, d_hidden=16)
        return train_heads_model(model, steps=6, batch_size=8, log_every=3), model

    losses, model = run()
    printed = capsys.readouterr().out
    assert printed.count("loss") == 2
    again, model2 = run()
    assert capsys.readouterr().out == printed and again == losses
    assert all(torch.equal(p, q) for p, q in zip(model.parameters(), model2.parameters()))


def test_recall_training_is_remembered_too(cache):
    def run():
        torch.manual_seed(0)
        return RecallAttention(num_keys=8, num_values=8, d_model=8, d_k=8)

    first = train_recall(run(), steps=4, num_pairs=3, eval_every=2)
    second = train_recall(run(), steps=4, num_pairs=3, eval_every=2)
    assert first == second and len(list(cache.glob("train_recall-*.pt"))) == 1


def _notebook_model(source: str):
    """A model class written in a 'notebook' (exec'd code, as a kernel cell is), and a fresh instance of it."""
    namespace = {"__name__": "__main__", "Seq2SeqWithAttention": Seq2SeqWithAttention, "torch": torch}
    exec(source, namespace)  # noqa: S102 - test input
    torch.manual_seed(0)
    return namespace["Mine"](12, emb_dim=8, hidden_dim=8, attn_dim=8)


MINE = """
class Mine(Seq2SeqWithAttention):
    def step(self, *args):
        out = super().step(*args)
        return out
"""


def test_a_model_class_written_in_a_notebook_is_fingerprinted_by_its_code(cache):
    data = make_reversal_data(50, 3, 5)
    train_seq2seq(_notebook_model(MINE), data, epochs=1)
    train_seq2seq(_notebook_model(MINE), data, epochs=1)
    assert len(list(cache.glob("*.pt"))) == 1
    train_seq2seq(_notebook_model(MINE.replace("return out", "return out  # same code")), data, epochs=1)
    assert len(list(cache.glob("*.pt"))) == 1  # a comment is not code
    changed = MINE.replace("out = super().step(*args)", "out = super().step(*args)\n        out = (out[0] * 1.0, *out[1:])")
    train_seq2seq(_notebook_model(changed), data, epochs=1)
    assert len(list(cache.glob("*.pt"))) == 2


def test_a_batch_function_is_fingerprinted_with_the_globals_it_reads(cache):
    from course_utils.models.language_model import CausalLM, sample_windows, train_lm

    def run(corpus):
        namespace = {"__name__": "__main__", "sample_windows": sample_windows, "ids": corpus}
        exec("def batch(g):\n    return sample_windows(ids, 8, 4, g)\n", namespace)  # noqa: S102
        torch.manual_seed(0)
        model = CausalLM(10, 8, d_model=8, num_heads=2, num_layers=1)
        return train_lm(model, namespace["batch"], steps=3)

    ids = torch.arange(40) % 10
    first = run(ids)
    assert run(ids) == first and len(list(cache.glob("*.pt"))) == 1
    run(ids.flip(0))  # another corpus read through the same global name
    assert len(list(cache.glob("*.pt"))) == 2


def test_what_cannot_be_fingerprinted_is_trained_not_stored(cache):
    from course_utils.models.language_model import CausalLM, sample_windows, train_lm

    draws = iter(range(100))  # state the fingerprint cannot see

    def batch(g):
        next(draws)
        return sample_windows(torch.arange(40) % 10, 8, 4, g)

    torch.manual_seed(0)
    train_lm(CausalLM(10, 8, d_model=8, num_heads=2, num_layers=1), batch, steps=2)
    assert not list(cache.glob("*.pt"))


def test_off_and_unset_and_unit_tests_never_store(tmp_path, monkeypatch):
    monkeypatch.setattr(training_cache, "enabled_in_this_process", True)
    monkeypatch.setenv(training_cache.ENV, "off")
    _seq2seq_run(epochs=1)
    monkeypatch.delenv(training_cache.ENV)
    _seq2seq_run(epochs=1)
    monkeypatch.setenv(training_cache.ENV, str(tmp_path))
    monkeypatch.setattr(training_cache, "enabled_in_this_process", False)
    _seq2seq_run(epochs=1)
    assert not list(tmp_path.iterdir())


def test_bad_input_still_gets_the_functions_own_error(cache):
    with pytest.raises(TypeError, match="ReversalData"):
        train_seq2seq(Seq2SeqWithAttention(12, emb_dim=8, hidden_dim=8, attn_dim=8), "not data")
    with pytest.raises(ValueError):
        train_seq2seq(Seq2SeqWithAttention(12, emb_dim=8, hidden_dim=8, attn_dim=8), make_reversal_data(20, 3, 5), epochs=0)
    assert not list(cache.glob("*.pt"))


def test_an_unreadable_stored_file_trains_again_and_a_folder_that_cannot_be_written_is_no_error(cache, monkeypatch):
    first = _seq2seq_run()
    (stored,) = cache.glob("*.pt")
    stored.write_bytes(b"not a torch file")
    assert _same_run(first, _seq2seq_run())  # trained again, and stored again
    assert stored.stat().st_size > 100
    blocker = cache / "a file"
    blocker.write_text("")
    monkeypatch.setenv(training_cache.ENV, str(blocker / "sub"))  # mkdir fails: NotADirectoryError
    assert _same_run(first, _seq2seq_run())
