# shellcheck shell=bash
# The snapshots of scripts/gpu-lent.sh (sourced by it and by tests/engine/gpu_lent.rs): WORK
# packed into DEST/gpu-lent.tar.gz, and the session log copied to DEST/session.txt, after
# every step and every few seconds while one runs, so that a call cut off mid-step still
# returns what its cases wrote.
#
#   lent_pack DEST WORK LOG            one snapshot
#   lent_packer DEST WORK LOG SECONDS  a snapshot every SECONDS until SIGTERM (it finishes the
#                                      snapshot under way, then stops)
#   lent_sweep DEST                    remove temporary files a killed snapshot left in DEST
#
# A snapshot is written to a temporary file in DEST (the same filesystem) and renamed over the
# last one, under a lock (one snapshot at a time); GNU tar's exit 1 ("file changed as we read
# it": a report or log being written) still leaves a whole archive and counts as done; any
# other failure is a `[snapshot ...] FAILED` line in LOG, the previous snapshot staying.

lent_pack() {
    local dest=$1 work=$2 log=$3
    (
        flock 9 || exit 1
        tmp=$(mktemp "$dest/.gpu-lent.tar.gz.XXXXXX") && chmod 644 "$tmp" || exit 1
        err=$(tar czf "$tmp" --warning=no-file-changed --ignore-failed-read \
            --exclude="$(basename "$work")/bin" --exclude='.pack.lock' \
            -C "$(dirname "$work")" "$(basename "$work")" 2>&1)
        rc=$?
        if ((rc > 1)); then
            rm -f "$tmp"
            echo "[snapshot $(date -u +%T)] FAILED: tar exit $rc: ${err:0:300}; the previous snapshot stays" >> "$log"
        elif ! moved=$(mv -fT "$tmp" "$dest/gpu-lent.tar.gz" 2>&1); then
            rm -f "$tmp"
            echo "[snapshot $(date -u +%T)] FAILED: $moved; the previous snapshot stays" >> "$log"
        fi
        tmp=$(mktemp "$dest/.session.txt.XXXXXX") && chmod 644 "$tmp" || exit 1
        if ! { cp "$log" "$tmp" && mv -fT "$tmp" "$dest/session.txt"; } 2> /dev/null; then
            rm -f "$tmp"
        fi
    ) 9> "$work/.pack.lock"
}

lent_packer() {
    local dest=$1 work=$2 log=$3 every=$4 stop=0 nap
    trap 'stop=1' TERM
    while ((stop == 0)); do
        sleep "$every" &
        nap=$!
        wait "$nap"
        kill "$nap" 2> /dev/null
        ((stop == 0)) || break
        lent_pack "$dest" "$work" "$log"
    done
}

lent_sweep() {
    rm -f "$1"/.gpu-lent.tar.gz.?????? "$1"/.session.txt.??????
}
