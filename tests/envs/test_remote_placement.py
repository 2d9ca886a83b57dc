"""``resources_per_worker`` places env workers on the node that has what they ask for: a
two-node cluster in this process (Ray's ``cluster_utils``), the second node with a ``desktop``
resource, as a CPU node of browsers or X desktops would declare with
``ray start --address=HEAD --resources='{"desktop": 4}'``."""

from __future__ import annotations

import pytest

ray = pytest.importorskip("ray")

from ray.cluster_utils import Cluster  # noqa: E402

from pixelrl.envs.remote import RayVectorEnv  # noqa: E402


@pytest.fixture(scope="module")
def two_nodes():
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    desktop_node = cluster.add_node(num_cpus=1, resources={"desktop": 2})
    ray.init(address=cluster.address, log_to_driver=False)
    yield cluster.head_node.node_id, desktop_node.node_id
    ray.shutdown()
    cluster.shutdown()


def test_workers_asking_for_a_desktop_land_on_the_desktop_node(two_nodes):
    envs = RayVectorEnv(
        "pixelrl/Desktop-ClickButton-v0",
        num_workers=2,
        per_worker=1,
        kwargs={"screen_size": (320, 240)},
        resources_per_worker={"num_cpus": 0.5, "resources": {"desktop": 1}},
    )
    try:
        head, desktop = two_nodes
        nodes = ray.get([slot.actor.node_id.remote() for slot in envs.slots])
        assert head != desktop and nodes == [desktop, desktop]
        obs, _ = envs.reset(seed=0)
        assert obs["screenshot"].shape == (2, 240, 320, 3)
    finally:
        envs.close()
