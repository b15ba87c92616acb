"""Controllers for test_campaign.py (module:function entries of a spec)."""
import os

from khz.campaign import pd_hold


def flaky(sim, entry):
    """pd_hold, but the first attempt of every run whose marker file is
    missing fails (it writes the marker): a run that a retry recovers."""
    marker = os.path.join(entry["markers"], f"{sim.path.replace('/', '_')}-{sim.body_mass.sum():.6f}")
    if not os.path.exists(marker):
        open(marker, "w").close()
        raise RuntimeError("first attempt fails on purpose")
    return pd_hold(sim, entry)


def broken(sim, entry):
    """Always fails: recorded as a failed run, the campaign goes on."""
    raise ValueError("this controller never works")


def kills_worker(sim, entry):
    """pd_hold, but the first attempt ends the process it runs in (a Dask
    worker lost mid-run: out of memory, a crash) after writing its marker."""
    marker = os.path.join(entry["markers"], "killed")
    if not os.path.exists(marker):
        open(marker, "w").close()
        os._exit(9)
    return pd_hold(sim, entry)
