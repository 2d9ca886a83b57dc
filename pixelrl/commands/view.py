"""``pixelrl view DIR --episode K --out FILE.gif|mp4``: an episode with its actions drawn."""

from __future__ import annotations

import argparse


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("view", help="render a recorded episode to GIF/MP4")
    p.add_argument("dir", help="dataset folder")
    p.add_argument("--episode", type=int, default=0)
    p.add_argument("--out", required=True, help="output .gif or .mp4")
    p.add_argument("--fps", type=float, default=None, help="default: the dataset's, at most 4")
    p.add_argument("--scale", type=int, default=1, help="enlarge small frames (nearest)")
    p.add_argument("--key", default=None, help="frame key to show (default: the first image)")
    p.add_argument("--no-map", action="store_true", help="navigation: no top-down map (no replay)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pixelrl.envs.recording.format import DatasetError
    from pixelrl.envs.recording.view import view_episode

    try:
        path, frames = view_episode(
            args.dir,
            args.episode,
            args.out,
            args.fps,
            args.scale,
            args.key,
            top_down=not args.no_map,
        )
    except (DatasetError, KeyError, ValueError) as e:
        print(f"pixelrl view: {e}")
        return 2
    print(f"wrote {path} ({frames} frames)")
    return 0
