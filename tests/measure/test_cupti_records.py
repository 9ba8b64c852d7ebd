"""Reading each call's GPU time from CUPTI records: the records are those torch.profiler gives (Kineto's activity
types and links), laid out as a profile of flush-then-call pairs is. The H200 runs the real profiler
(tests/gpu/test_clock_gpu.py)."""
from __future__ import annotations

import pytest

from paretotune.measure.cupti import CALL_RANGE, FLUSH_RANGE, Activity, ClockUnavailable, call_times

US = 1000  # ns
FLUSH = {"memset", "fill"}  # the names of a flush's GPU work, as a profile of flushes alone gives them


def profile(call_kernels: list[list[int]], *, link_calls: bool, flush_parts: int = 1,
            link_flush: bool = True) -> list[Activity]:
    """Per call: a flush range holding aten::zero_ (its GPU work: ``flush_parts`` activities linked to it), then a
    call range holding one launch per kernel (its kernels linked to the range, or not: a Triton launch)."""
    acts: list[Activity] = []
    cpu, gpu, ids = 0, 0, 100
    for kernels in call_kernels:
        ids += 1
        flush_op = ids
        acts += [Activity(FLUSH_RANGE, "user_annotation", cpu, cpu + 5 * US, id=ids + 1000),
                 Activity("aten::zero_", "cpu_op", cpu + US, cpu + 4 * US, id=flush_op)]
        for part in range(flush_parts):
            acts.append(Activity("memset" if part == 0 else "fill", "gpu_memset" if part == 0 else "kernel", gpu,
                                 gpu + 60 * US, linked=flush_op if link_flush else 0))
            gpu += 61 * US
        cpu += 6 * US
        ids += 1
        call = ids
        acts.append(Activity(CALL_RANGE, "user_annotation", cpu, cpu + 10 * US, id=call))
        for dur in kernels:
            acts.append(Activity("triton_kernel", "kernel", gpu, gpu + dur * US, linked=call if link_calls else 0))
            gpu += dur * US + 2 * US  # a gap between kernels is not the call's GPU time
        cpu += 11 * US
    return acts


@pytest.mark.parametrize("flush_parts", [1, 2])
def test_triton_launches_without_links_are_timed_between_the_flushes(flush_parts: int) -> None:
    acts = profile([[19], [20, 3], [21]], link_calls=False, flush_parts=flush_parts)
    assert call_times(acts, 3, FLUSH)[0] == pytest.approx([0.019, 0.023, 0.021])


def test_unlinked_kernels_and_unlinked_flushes_are_refused_not_guessed() -> None:
    acts = profile([[19], [20]], link_calls=False, link_flush=False)
    with pytest.raises(ClockUnavailable, match="0 of them flushes; 0 flush-to-flush segments"):
        call_times(acts, 2, FLUSH)


def test_a_call_with_no_gpu_work_is_refused() -> None:
    acts = profile([[19], []], link_calls=False)
    with pytest.raises(ClockUnavailable, match=r"2 flush-to-flush segments \(1 with work\) for 2 calls"):
        call_times(acts, 2, FLUSH)


class OlderKinetoEvent:
    """What torch 2.11's ``_KinetoEvent`` offers (no ``activity_type``, no ``end_ns``): the H200's torch."""

    def __init__(self, name: str, on_gpu: bool, start: int, duration: int, corr: int = 0, linked: int = 0) -> None:
        self._v = (name, on_gpu, start, duration, corr, linked)

    def name(self) -> str:
        return self._v[0]

    def device_type(self) -> object:
        from torch.autograd import DeviceType

        return DeviceType.CUDA if self._v[1] else DeviceType.CPU

    def start_ns(self) -> int:
        return self._v[2]

    def duration_ns(self) -> int:
        return self._v[3]

    def correlation_id(self) -> int:
        return self._v[4]

    def linked_correlation_id(self) -> int:
        return self._v[5]


def test_records_of_a_torch_without_activity_types_are_read_by_their_device() -> None:
    from paretotune.measure.cupti import activity

    events = [OlderKinetoEvent(FLUSH_RANGE, False, 0, 5 * US, corr=1),
              OlderKinetoEvent("aten::zero_", False, US, US, 2),
              OlderKinetoEvent(FLUSH_RANGE, True, 0, 60 * US),  # the flush range's GPU-side annotation
              OlderKinetoEvent("fill", True, 0, 60 * US, linked=2),
              OlderKinetoEvent(CALL_RANGE, False, 6 * US, 10 * US, corr=3),
              OlderKinetoEvent("triton_kernel", True, 61 * US, 19 * US)]
    acts = [activity(e) for e in events]
    assert [a.kind for a in acts] == ["user_annotation", "cpu_op", "gpu_user_annotation", "kernel", "user_annotation",
                                      "kernel"]
    assert acts[-1].end_ns == 80 * US
    assert call_times(acts, 1, FLUSH)[0] == pytest.approx([0.019])


def test_a_record_inside_a_flush_sharing_a_call_op_s_number_never_makes_the_call_a_flush() -> None:
    """Records of two numberings (ops' ids, CUPTI's correlations of CUDA API calls) can share a number; on the
    H200's torch 2.11 an API record inside a flush range carried no link either, so it read as an op there:
    61 of 100 records of torch copy_ calls were taken for flushes by links alone. Names and links together
    tell them apart."""
    acts = profile([[30], [31]], link_calls=True)
    call_ops = [a.id for a in acts if a.name == CALL_RANGE]
    flush_ops = [a for a in acts if a.name == "aten::zero_"]
    acts += [Activity("cudaMemsetAsync", "cpu_op", f.start_ns + 10, f.start_ns + 20, id=call)
             for f, call in zip(flush_ops, call_ops, strict=True)]
    assert call_times(acts, 2, FLUSH)[0] == pytest.approx([0.030, 0.031])


def test_a_call_that_zeroes_a_tensor_itself_keeps_that_work() -> None:
    acts = profile([[30], [31]], link_calls=True)
    call = next(a for a in acts if a.name == CALL_RANGE)
    kernel = next(a for a in acts if a.name == "triton_kernel")
    acts.append(Activity("fill", "kernel", kernel.end_ns + 1 * US, kernel.end_ns + 4 * US, linked=call.id))
    assert call_times(acts, 2, FLUSH)[0] == pytest.approx([0.033, 0.031])


def test_a_profile_that_lost_a_flush_is_taken_again_and_three_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """A profile now and then keeps one flush fewer than its calls (the H200: 399 of 400); the timing profiles
    again instead of failing the campaign's baseline, and refuses the clock only after three such profiles."""
    from paretotune.measure import cupti
    from paretotune.measure.timing import CUPTI_PROFILES, cupti_profile

    good = profile([[19], [20], [21]], link_calls=False)
    lost = [Activity(a.name, a.kind, a.start_ns, a.end_ns, a.id, 0) if a.name == "memset" and a.start_ns > 0 else a
            for a in good]  # the second and third calls' flushes lost their links
    profiles = [lost, good]
    taken: list[int] = []

    def fake_profile(fn: object, calls: int) -> tuple[list[Activity], set[str]]:
        taken.append(calls)
        return profiles.pop(0) if profiles else lost, FLUSH

    monkeypatch.setattr(cupti, "profile_calls", fake_profile)
    assert cupti_profile(lambda: None, 3)[0] == pytest.approx([0.019, 0.020, 0.021]) and taken == [3, 3]
    taken.clear()
    with pytest.raises(ClockUnavailable, match=rf"^{CUPTI_PROFILES} profiles refused: .*1 flush-to-flush segments.*"
                                                   r"without a flush link: 1 \(no link\), 2 \(no link\)$"):
        cupti_profile(lambda: None, 3)
    assert len(taken) == CUPTI_PROFILES


def test_a_flush_that_lost_its_link_is_still_a_flush_unless_a_call_op_claims_it() -> None:
    """The H200 (torch 2.11) lost the link of 1 or 2 flushes in 400 calls of ~100 us Helion kernels, at no fixed
    place: where the other flushes are linked, such a flush still ends its segment; one whose link points at an op
    of a call is that call's own work, and the count then refuses the profile."""
    acts = profile([[19], [20], [21], [22]], link_calls=False)
    memsets = [a for a in acts if a.name == "memset"]
    no_link = [Activity(a.name, a.kind, a.start_ns, a.end_ns, a.id, 0) if a is memsets[2] else a for a in acts]
    assert call_times(no_link, 4, FLUSH)[0] == pytest.approx([0.019, 0.020, 0.021, 0.022])
    call_op = [a.id for a in acts if a.name == CALL_RANGE][1]
    claimed = [Activity(a.name, a.kind, a.start_ns, a.end_ns, a.id, call_op) if a is memsets[2] else a for a in acts]
    with pytest.raises(ClockUnavailable, match=r"3 flush-to-flush segments .* 2 \(a call op\)$"):
        call_times(claimed, 4, FLUSH)


def test_a_call_s_gpu_work_is_named_as_most_calls_ran_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """What the clock counts as one call, by name: a kernel whose timed call also ran a gather of its outputs (a
    float copy and a ``cat``, as paretotune's Helion adapter once did inside every launch) says so."""
    from paretotune.measure import cupti
    from paretotune.measure.cupti import call_segments, call_work
    from paretotune.measure.timing import bench

    acts = profile([[19, 30, 40], [20, 31, 41], [21]], link_calls=False)
    names = iter(["_helion_quant", "to_copy", "CatArrayBatchedCopy"] * 2 + ["_helion_quant"])
    acts = [Activity(next(names), a.kind, a.start_ns, a.end_ns, a.id, a.linked) if a.name == "triton_kernel" else a
            for a in acts]
    segments = call_segments(acts, 3, FLUSH)
    assert call_work(segments) == ("_helion_quant", "to_copy", "CatArrayBatchedCopy")
    assert call_work(call_segments(profile([[19], [20]], link_calls=True), 2, FLUSH)) == ("triton_kernel",)

    monkeypatch.setattr(cupti, "profile_calls", lambda fn, calls: (profile([[19, 3]] * calls, link_calls=False),
                                                                    FLUSH))
    monkeypatch.setattr("triton.testing.do_bench", lambda fn, **kw: 0.03 if kw.get("return_mode") == "min" else [0.03])
    timing = bench(lambda: None, 1.0, 1.0, "cupti")
    assert timing.call_work == ("triton_kernel", "triton_kernel") and timing.median_ms == pytest.approx(0.022)
