#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder image (Ubuntu 22.04 base),
# with this repository unzipped at /autograder/source. It installs the grader into its own
# virtual environment (/autograder/venv), which run_autograder uses.
#   PDL_GRADER_DIR  where the repository is (default /autograder/source)
#   PDL_VENV        where to create the environment (default /autograder/venv)
set -euo pipefail
SOURCE=${PDL_GRADER_DIR:-/autograder/source}
VENV=${PDL_VENV:-/autograder/venv}
cd "$SOURCE"

export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# bubblewrap: the sandbox student code runs in; python3-venv: Ubuntu's pip refuses system
# installs (PEP 668) on newer images, a venv works on all of them.
apt-get install -y -qq --no-install-recommends python3 python3-venv python3-pip bubblewrap ca-certificates

python3 -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --upgrade pip
# Gradescope machines have no GPU: the CPU build of torch (a fraction of the CUDA build's
# size) is all the virtual GPUs need. Same pin as scripts/install.sh.
"$VENV/bin/python" -m pip install -q "torch==2.13.0" --index-url https://download.pytorch.org/whl/cpu
"$VENV/bin/python" -m pip install -q "$SOURCE"
ln -sf "$VENV/bin/pdl-grade" /usr/local/bin/pdl-grade

# Fail the image build now rather than every submission later.
"$VENV/bin/pdl-grade" --help >/dev/null
"$VENV/bin/python" -c "import grader.reports, torch; print('pdl-autograder ready, torch', torch.__version__)"
