"""Overlapping and concurrent captures (compiler/capturing/records.py): torch's loggers are changed once and put
back exactly when the last capture ends, in any order; each capture gets the records of its own
thread; an error or a KeyboardInterrupt in the block restores everything."""
from __future__ import annotations

import logging
import sys
import threading

import pytest
import torch

import compiler
from compiler.capturing.records import ARTIFACT_LOGGERS, RecordCollector


def logger_state():
    """Level, propagate and handlers of every logger a capture touches (torch's lazy trace handler,
    which removes itself on the first record when TORCH_TRACE is unset, is torch's business)."""
    from torch._logging._internal import _is_torch_handler, trace_log

    loggers = [trace_log] + [logging.getLogger(name) for name in ARTIFACT_LOGGERS.values()]
    return [(lg.name, lg.level, lg.propagate, [h for h in lg.handlers if not _is_torch_handler(h)])
            for lg in loggers]


def double(x):
    return x * 2


def triple(x):
    return x * 3


def recompile_twice(fn):
    compiled = torch.compile(fn, backend="eager")
    compiled(torch.ones(3))
    compiled(torch.ones(3, dtype=torch.float64))  # dtype guard fails: a recompile


@pytest.fixture
def user_logs():
    """The test may call torch._logging.set_logs; afterwards torch's defaults come back."""
    yield
    torch._logging.set_logs()


@pytest.mark.parametrize("set_logs_first", [True, False])
def test_out_of_order_exit_restores_loggers_and_user_logs_still_print(set_logs_first, user_logs, capfd):
    if set_logs_first:
        torch._logging.set_logs(recompiles=True)
    before = logger_state()
    outer, inner = compiler.capture(), compiler.capture()
    cap_outer = outer.__enter__()
    cap_inner = inner.__enter__()
    torch.compile(double, backend="eager")(torch.ones(3))
    outer.__exit__(None, None, None)  # the first capture ends first
    assert logger_state() != before  # the inner one still records
    torch.compile(triple, backend="eager")(torch.ones(3))
    inner.__exit__(None, None, None)
    assert logger_state() == before

    assert [c.name for c in cap_outer.compiles] == ["double"]
    assert [c.name for c in cap_inner.compiles] == ["double", "triple"]

    if not set_logs_first:
        torch._logging.set_logs(recompiles=True)
    capfd.readouterr()
    torch._dynamo.reset()
    recompile_twice(double)
    err = capfd.readouterr().err
    assert "Recompiling function double" in err and "dtype mismatch" in err


def test_set_logs_inside_a_capture_is_kept(user_logs):
    recompiles = logging.getLogger(ARTIFACT_LOGGERS["recompiles"])
    with compiler.capture():
        torch._logging.set_logs(recompiles=True)
    assert recompiles.propagate is True and recompiles.level == logging.DEBUG


def test_each_thread_records_only_its_own_compiles():
    both_active = threading.Barrier(2, timeout=60)
    captures, errors = {}, []

    def work(fn):
        try:
            with compiler.capture() as cap:
                both_active.wait()  # each compile runs while the other capture is active
                torch.compile(fn, backend="eager")(torch.ones(3))
                both_active.wait()
            captures[fn.__name__] = cap
        except BaseException as exc:  # noqa: BLE001 — reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(fn,)) for fn in (double, triple)]
    before = logger_state()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert logger_state() == before
    ids = {name: {c.compile_id for c in cap.compiles} for name, cap in captures.items()}
    assert [c.name for c in captures["double"].compiles] == ["double"]
    assert [c.name for c in captures["triple"].compiles] == ["triple"]
    assert not ids["double"] & ids["triple"]
    for cap in captures.values():  # no stray record of the other thread's compile
        assert {r.compile_id for r in cap.live.records if r.compile_id} == {cap.compiles[0].compile_id}


def test_a_record_from_a_thread_without_capture_goes_to_the_capture_of_its_compile():
    """A lazily compiled backward may run on another thread (autograd's device threads): its
    records go to the capture that saw the forward compile, not to every capture."""
    mine, other = RecordCollector(), RecordCollector()
    mine.install()
    other_ready, done = threading.Event(), threading.Event()

    def other_thread():
        other.install()
        torch.compile(triple, backend="eager")(torch.ones(3))
        other_ready.set()
        done.wait(60)
        other.uninstall()

    thread = threading.Thread(target=other_thread)
    thread.start()
    try:
        assert other_ready.wait(60)
        out = torch.compile(lambda x: (x.sin() * 2).sum(), backend="aot_eager")(torch.randn(4, requires_grad=True))
        backward = threading.Thread(target=out.backward)
        backward.start()
        backward.join()
    finally:
        done.set()
        thread.join()
        mine.uninstall()
    forward_id = next(r.compile_id for r in mine.records if r.kind == "dynamo_start")
    assert [r.compile_id for r in mine.records if r.kind == "bwd_compilation_metrics"] == [forward_id]
    assert not [r for r in other.records if r.kind == "bwd_compilation_metrics"]
    assert forward_id not in other.compile_ids


@pytest.mark.parametrize("raised", [ZeroDivisionError, KeyboardInterrupt])
def test_error_or_interrupt_in_the_block_restores_everything(raised):
    before = logger_state()
    with pytest.raises(raised):
        with compiler.capture() as cap:
            torch.compile(double, backend="eager")(torch.ones(3))
            raise raised()
    assert logger_state() == before
    assert [c.name for c in cap.compiles] == ["double"]  # what was captured is kept

    outer = compiler.capture()
    outer.__enter__()
    with pytest.raises(raised):
        with compiler.capture():
            raise raised()
    assert logger_state() != before  # the outer capture is still recording
    outer.__exit__(None, None, None)
    assert logger_state() == before


def test_install_and_uninstall_twice_are_harmless():
    before = logger_state()
    collector = RecordCollector()
    collector.install()
    collector.install()
    collector.uninstall()
    assert logger_state() == before
    collector.uninstall()
    assert logger_state() == before


def test_a_thread_capturing_without_artifact_logs_keeps_its_artifacts_to_itself():
    """Thread A captures without the artifact loggers, thread B with them: A's recompile message is
    A's own record (dropped, as A asked), never B's."""
    plain, full = RecordCollector(with_artifact_logs=False), RecordCollector()
    full_ready, done = threading.Event(), threading.Event()

    def other_thread():
        full.install()
        full_ready.set()
        done.wait(60)
        full.uninstall()

    thread = threading.Thread(target=other_thread)
    thread.start()
    try:
        assert full_ready.wait(60)
        plain.install()
        recompile_twice(double)
    finally:
        plain.uninstall()
        done.set()
        thread.join()
    assert any(r.kind == "artifact:recompile_reasons" for r in plain.records)
    assert not full.records and not any(r.kind.startswith("log:") for r in plain.records)


def test_a_collector_gets_only_the_artifact_logs_it_names_and_the_loggers_are_put_back():
    before = logger_state()
    some, none = RecordCollector(with_artifact_logs=["recompiles"]), RecordCollector(with_artifact_logs=False)
    some.install()
    none.install()
    try:
        ir = logging.getLogger(ARTIFACT_LOGGERS["ir_pre_fusion"])
        assert not any(type(h).__name__ == "_ArtifactHandler" for h in ir.handlers)  # nobody asked: Inductor stays quiet
        assert any(type(h).__name__ == "_ArtifactHandler"
                   for h in logging.getLogger(ARTIFACT_LOGGERS["recompiles"]).handlers)
        for kind, name in ARTIFACT_LOGGERS.items():  # as torch logs them: debug() on each artifact logger
            logging.getLogger(name).debug("[0/1] a %s message", kind)
    finally:
        none.uninstall()
        some.uninstall()
    assert logger_state() == before
    assert [r.kind for r in some.records if r.kind.startswith("log:")] == ["log:recompiles"]
    assert not any(r.kind.startswith("log:") for r in none.records)
    with pytest.raises(ValueError, match=r"unknown artifact logs \['ir'\]"):
        RecordCollector(with_artifact_logs=["ir"])


def sine_twice(x):
    return x.sin() * 2


def cosine_plus_three(x):
    return x.cos() + 3


def test_two_explores_started_together_each_get_their_own_compile():
    """Both threads reset Dynamo, so both compiles are numbered 0/0: each capture must still hold its
    own compile, graph and bytecode (the process-wide bytecode hook follows the records' thread rule),
    with a complete summary. Several rounds: the interleaving differs each time."""
    for _ in range(4):
        start = threading.Barrier(2, timeout=60)
        captures, errors = {}, []

        def work(fn):
            try:
                start.wait()
                captures[fn.__name__] = compiler.explore(fn, torch.randn(4), backend="eager", timing=False)
            except BaseException as exc:  # noqa: BLE001 — reported by the main thread
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(fn,)) for fn in (sine_twice, cosine_plus_three)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors
        for name, cap in captures.items():
            assert [c.name for c in cap.compiles] == [name]
            assert cap.summary.compiles == 1 and cap.summary.graphs == 1 and cap.summary.guards > 0
            (compiled,) = cap.compiles
            assert compiled.bytecode.original.name == name
            op = "sin" if name == "sine_twice" else "cos"
            assert op in compiled.graph.code
            assert {r.compile_id for r in cap.live.records if r.compile_id} == {compiled.compile_id}
            if cap.options.get("overlapping_captures"):  # they did overlap in time: said in the overview
                from explorer.views.overview import findings

                assert any("ran at the same time" in text for _, text in findings(cap))


def test_captures_read_in_threads_while_the_readers_are_being_built():
    """Reading types that nest registers a half-built reader first: another thread must wait for it,
    not read a capture with its fields missing (this returned captures with no compiles)."""
    data = compiler.explore(double, torch.ones(3), backend="eager", timing=False).to_data()
    from compiler.stages.capture import Capture

    expected = Capture.from_data(data).to_data()
    switch_interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # threads switch often, as under load: the race shows every round
    try:
        _read_in_two_threads_with_fresh_readers(data, expected)
    finally:
        sys.setswitchinterval(switch_interval)


def _read_in_two_threads_with_fresh_readers(data, expected):
    import compiler.stages.data as data_machinery
    from compiler.stages.capture import Capture

    for _ in range(5):
        data_machinery._build_converter.cache_clear()
        data_machinery._DATA_CONVERTERS.clear()
        start = threading.Barrier(2, timeout=60)
        read, errors = [], []

        def load():
            try:
                start.wait()
                read.append(Capture.from_data(data).to_data())
            except BaseException as exc:  # noqa: BLE001
                errors.append(exc)

        threads = [threading.Thread(target=load) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors
        assert read == [expected, expected]
