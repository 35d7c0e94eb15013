"""Files in a directory other users can write (issue 40).

No writer -- ``sim run``'s result, ``sim plot``'s and ``sim compare``'s figure, ``sim
animate``'s GIF -- follows a link planted at a name it uses: the temporary file's old
predictable name, the name its random generator will pick (made predictable here), or the
output itself.  The link's target stays as it was, and the output is a regular file.  A
reservation whose run is gone (killed: nobody holds its lock) is taken over, whatever pid or
host it names; a live one is not; reserving names leaves nothing that blocks another user.
"""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import h5py
import pytest
from matplotlib.figure import Figure

from sim.app.cli import main
from sim.app.results import RESERVATION, release, reserve
from test_faults import SHORT
from test_odd_inputs import MOTION

ROOT = Path(__file__).resolve().parent.parent
PRECIOUS = b"a file of the user's\n"
PLANTED = "planted"     # the first name tempfile's generator gives here (fixture `predictable`)

@pytest.fixture
def predictable(monkeypatch):
    """tempfile's random names made known in advance: ``planted`` first, as an attacker who
    could guess them would have it."""
    def names():
        yield PLANTED
        yield from tempfile._RandomNameSequence()
    monkeypatch.setattr(tempfile, "_get_candidate_names", names)


@pytest.fixture
def scenario(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(SHORT)
    return path


@pytest.fixture
def result(tmp_path, scenario):
    out = tmp_path / "result.h5"
    assert main(["run", str(scenario), "--out", str(out)]) == 0
    return out


def plant(victim, *links):
    """Symbolic links ``links`` to ``victim``, a file holding :data:`PRECIOUS`."""
    victim.write_bytes(PRECIOUS)
    for link in links:
        link.symlink_to(victim)


def check_untouched(victim, out):
    """The link target is unchanged, ``out`` a regular file, no temporary file left."""
    assert victim.read_bytes() == PRECIOUS, "a planted link was followed"
    assert out.is_file() and not out.is_symlink()
    assert all(p.is_symlink() for p in out.parent.glob(".*.tmp")), "a temporary file was left"


def test_run_follows_no_planted_link(tmp_path, scenario, predictable, capsys):
    out = tmp_path / "shared" / "out.h5"
    out.parent.mkdir()
    victim = tmp_path / "victim"
    plant(victim, out.with_name(f".out.h5.{os.getpid()}.tmp"), out.with_name(f".out.h5.{PLANTED}.tmp"))
    assert main(["run", str(scenario), "--out", str(out)]) == 0, capsys.readouterr().err
    check_untouched(victim, out)
    with h5py.File(out, "r") as f:
        assert f.attrs["status"] == "complete"


def test_forced_run_replaces_a_link_at_the_output(tmp_path, scenario, predictable, capsys):
    out = tmp_path / "out.h5"
    victim = tmp_path / "victim"
    plant(victim, out)
    assert main(["run", str(scenario), "--out", str(out), "--force"]) == 0, capsys.readouterr().err
    check_untouched(victim, out)


@pytest.mark.parametrize("command", ["plot", "compare"])
def test_figures_follow_no_planted_link(tmp_path, predictable, command, capsys):
    motion = tmp_path / "motion.toml"
    motion.write_text(MOTION)
    result = tmp_path / "motion.h5"
    assert main(["run", str(motion), "--out", str(result)]) == 0
    out = tmp_path / "figure.png"
    victim = tmp_path / "victim"
    plant(victim, out, out.with_name(f".figure.png.{PLANTED}.tmp"))
    inputs = [str(result)] * (2 if command == "compare" else 1)
    assert main([command, *inputs, "--out", str(out)]) == 0, capsys.readouterr().err
    check_untouched(victim, out)
    assert out.read_bytes().startswith(b"\x89PNG")


@pytest.mark.parametrize("kind", ["directory", "link-to-device"])
def test_figure_is_not_written_over_what_is_not_a_file(tmp_path, result, kind, capsys):
    """A directory, or a link to a device, at the output: refused in one line, left alone."""
    out = tmp_path / "figure.png"
    if kind == "directory":
        out.mkdir()
    else:
        out.symlink_to("/dev/null")
    assert main(["plot", str(result), "--out", str(out)]) == 2
    assert capsys.readouterr().err.strip() == (f"error: {out}: not a regular file (a directory, device, pipe or "
                                               f"socket); name a file to write the figure to")
    assert out.is_dir() if kind == "directory" else out.is_symlink() and Path("/dev/null").is_char_device()


def test_animation_follows_no_planted_link(tmp_path, result, predictable, capsys):
    out = tmp_path / "anim.gif"
    victim = tmp_path / "victim"
    plant(victim, out, out.with_name(f".anim.{os.getpid()}.tmp.gif"), out.with_name(f".anim.gif.{PLANTED}.tmp"))
    assert main(["animate", str(result), "--mode", "1", "--frames", "12", "--out", str(out)]) == 0, \
        capsys.readouterr().err
    check_untouched(victim, out)
    assert out.read_bytes().startswith(b"GIF8")


def test_interrupted_plot_keeps_the_previous_figure(tmp_path, result, monkeypatch, capsys):
    """A stop while the figure is written (the image half-encoded) leaves the previous image."""
    out = tmp_path / "figure.png"
    assert main(["plot", str(result), "--out", str(out)]) == 0
    before = out.read_bytes()

    def interrupted(self, fname, **kwargs):
        if isinstance(fname, (str, os.PathLike)):
            fname = open(fname, "wb")
        fname.write(b"\x89PNG half")
        raise KeyboardInterrupt

    monkeypatch.setattr(Figure, "savefig", interrupted)
    assert main(["plot", str(result), "--out", str(out)]) == 130
    assert capsys.readouterr().err.strip().splitlines()[-1] == "error: interrupted"
    assert out.read_bytes() == before
    assert not list(tmp_path.glob(".*.tmp"))


# --- reservations: a run that is gone does not hold its name ------------------------------------

@pytest.mark.parametrize("content", [
    RESERVATION + b"%d (%s)\n" % (os.getppid(), os.uname().nodename.encode()),   # pid reused since
    RESERVATION + b"999999999 (%s)\n" % os.uname().nodename.encode(),            # pid gone
    RESERVATION + b"%d (container-4f2a)\n" % os.getpid(),                        # another host
    b"",                                                     # a start cut short (full disk, kill)
], ids=["pid-reused", "pid-dead", "other-host", "empty"])
def test_reservation_of_a_run_that_is_gone_is_taken_over(tmp_path, scenario, content, capsys):
    out = tmp_path / "out.h5"
    out.write_bytes(content)
    assert main(["run", str(scenario), "--out", str(out)]) == 0, capsys.readouterr().err
    with h5py.File(out, "r") as f:
        assert f.attrs["status"] == "complete"


HOLD = """\
import sys, time
from pathlib import Path
from sim.app.results import reserve
print(reserve(Path(sys.argv[1]), numbered=True), flush=True)
time.sleep(600)
"""


def test_live_reservation_holds_until_its_run_is_killed(tmp_path, scenario, capsys):
    """A run in progress (another process holding the reservation) keeps its name: refused
    with ``--out``, skipped by a default name; once it is killed (SIGKILL), the name is free."""
    out = tmp_path / "out.h5"
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(out)], stdout=subprocess.PIPE, text=True,
                              env=dict(os.environ, PYTHONPATH=str(ROOT)))
    try:
        assert holder.stdout.readline().strip() == str(out)
        assert main(["run", str(scenario), "--out", str(out)]) == 2
        assert f"reserved by a run in progress (pid {holder.pid} on" in capsys.readouterr().err
        second = reserve(out, numbered=True)
        assert second.name == "out-2.h5"
        release(second)
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    assert out.read_bytes().startswith(RESERVATION)
    assert main(["run", str(scenario), "--out", str(out)]) == 0, capsys.readouterr().err


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as another user")
def test_reservations_do_not_block_another_user():
    """Names reserved in a directory several users write leave nothing that another user cannot
    use: ``nobody`` reserves there after root, and takes over root's reservation of a run that
    was killed."""
    shared = Path(tempfile.mkdtemp(prefix="ffrsim-shared-"))     # not under pytest's private tmp_path
    shared.chmod(0o777)
    release(reserve(shared / "a.h5"))
    (shared / "b.h5").write_bytes(RESERVATION + b"999999999 (elsewhere)\n")
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:        # the other user: a forked child (its Python may be out of its reach)
        try:
            os.setgid(65534)
            os.setuid(65534)
            for name in ("a.h5", "b.h5"):
                path = reserve(shared / name)
                os.write(write, f"{path.name} ".encode())
                release(path)
        except BaseException as exc:
            os.write(write, repr(exc).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        said = pipe.read()
    os.waitpid(pid, 0)
    try:
        assert said.split() == ["a.h5", "b.h5"], said
        assert not list(shared.iterdir())
    finally:
        shutil.rmtree(shared)
