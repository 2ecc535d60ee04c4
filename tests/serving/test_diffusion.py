"""utils/serving/diffusion.py: the latent and token arithmetic against Wan 2.1's published shapes, and the job
queue (ids, idempotent submit, progress events, cancellation at a step boundary, ETA) on a fake clock."""
import pytest

from utils.serving import diffusion as d


class FakeClock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


def test_wan_720p_latent_and_tokens():
    lat = d.latent_shape(81, 720, 1280)
    assert (lat["t"], lat["h"], lat["w"], lat["channels"]) == (21, 90, 160, 16)
    assert lat["tokens"] == 21 * 45 * 80 == 75600


def test_five_frames_give_two_latent_frames_the_published_vae_example():
    # Wan VAE: [1, 3, 5, 512, 512] -> [1, 16, 2, 64, 64]
    lat = d.latent_shape(5, 512, 512)
    assert (lat["t"], lat["h"], lat["w"]) == (2, 64, 64)


@pytest.mark.parametrize("frames,h,w", [(80, 720, 1280), (0, 720, 1280), (81, 720, 1288), (81, 8, 16)])
def test_sizes_the_vae_cannot_take_whole_are_refused(frames, h, w):
    with pytest.raises(d.LatentShapeError):
        d.latent_shape(frames, h, w)


def test_parameter_counts_match_the_model_names():
    assert d.dit("wan2.1-t2v-14b").params() == pytest.approx(14e9, rel=0.01)
    assert d.dit("wan2.1-t2v-1.3b").params() == pytest.approx(1.3e9, rel=0.08)
    assert d.dit("wan2.1-t2v-14b").params_per_video_token() < d.dit("wan2.1-t2v-14b").params()


def test_attention_grows_with_the_square_of_the_tokens():
    one, two = d.dit_pass_flops(1e9, 1000, 10, 100), d.dit_pass_flops(1e9, 2000, 10, 100)
    assert two["attention"] == 4 * one["attention"] and two["linear"] == 2 * one["linear"]


def test_a_job_runs_step_by_step_with_monotone_progress():
    clock = FakeClock()
    jq = d.JobQueue(clock, step_seconds=2.0)
    jid = jq.submit(steps=3)
    while jq.work() is not None:
        clock.t += 2.0
    kinds = [e[1] for e in jq.events(jid)]
    assert kinds == ["queued", "started", "progress", "progress", "progress", "done"]
    steps = [e[2]["step"] for e in jq.events(jid) if e[1] == "progress"]
    assert steps == [1, 2, 3] and jq.jobs[jid].state == d.DONE


def test_a_retried_submit_with_the_same_key_is_the_same_job():
    jq = d.JobQueue(FakeClock(), 1.0)
    a, b = jq.submit(40, key="req-7"), jq.submit(40, key="req-7")
    assert a == b and len(jq.jobs) == 1 and jq.position(a) == 0


def test_events_after_a_sequence_number_resume_a_dropped_stream():
    jq = d.JobQueue(FakeClock(), 1.0)
    jid = jq.submit(4)
    jq.work()
    jq.work()
    seen = jq.events(jid)[-1][0]
    jq.work()
    new = jq.events(jid, after=seen)
    assert [e[2]["step"] for e in new] == [3] and all(e[0] > seen for e in new)


def test_cancelling_a_queued_job_removes_it_and_moves_the_others_up():
    jq = d.JobQueue(FakeClock(), 1.0)
    _, b, c = jq.submit(5), jq.submit(5), jq.submit(5)
    assert jq.cancel(b) == d.CANCELLED and jq.position(c) == 1 and jq.position(b) == -1
    assert jq.eta(c) == 10.0


def test_cancelling_a_running_job_stops_it_at_the_next_step_and_frees_the_gpu():
    jq = d.JobQueue(FakeClock(), 1.0)
    a, b = jq.submit(40), jq.submit(3)
    for _ in range(5):
        jq.work()
    jq.cancel(a)
    assert jq.jobs[a].state == d.RUNNING          # the step in flight is not interrupted
    jq.work()                                      # the boundary: cancelled, no sixth step
    assert jq.jobs[a].state == d.CANCELLED and jq.jobs[a].done_steps == 5
    jq.work()
    assert jq.jobs[b].state == d.RUNNING and jq.jobs[b].done_steps == 1
    assert jq.cancel(a) == d.CANCELLED             # cancelling twice is not an error


def test_eta_counts_the_steps_left_ahead_and_own():
    jq = d.JobQueue(FakeClock(), 1.5)
    a, b = jq.submit(10), jq.submit(4)
    for _ in range(6):
        jq.work()
    assert jq.eta(a) == 1.5 * 4 and jq.eta(b) == 1.5 * (4 + 4)


def test_a_failing_step_fails_its_job_not_the_worker():
    jq = d.JobQueue(FakeClock(), 1.0)
    a, b = jq.submit(3), jq.submit(1)

    def step(job):
        if job.id == a and job.done_steps == 1:
            raise RuntimeError("CUDA out of memory")
    while jq.work(step) is not None:
        pass
    assert jq.jobs[a].state == d.FAILED and jq.jobs[a].events[-1][2]["error"] == "RuntimeError"
    assert jq.jobs[b].state == d.DONE
