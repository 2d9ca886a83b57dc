import sys

from pixelrl.cli import main

sys.exit(main())
