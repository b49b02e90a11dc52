# shellcheck shell=sh
# One file as a blob, pushed from the device over the registry's HTTP API (a monolithic upload:
# POST for a session, PUT with the digest); prints `edgebench-blob DIGEST BYTES`.
# Sent by edgebench.runtimes.image_registry (_PUSH_BLOB) as the text of one `sh -c`.
set -e
url=$1; ca=$2; repo=$3; file=$4
digest=sha256:$(sha256sum "$file" | cut -d' ' -f1)
loc=$(curl -sSf --cacert "$ca" -X POST -D - -o /dev/null "$url/v2/$repo/blobs/uploads/" |
      awk 'tolower($1) == "location:" {print $2}' | tr -d '\r')
case "$loc" in http*) ;; *) loc="$url$loc" ;; esac
case "$loc" in *\?*) sep='&' ;; *) sep='?' ;; esac
curl -sSf --cacert "$ca" -X PUT -H 'Content-Type: application/octet-stream' --data-binary @"$file" \
  "$loc${sep}digest=$digest" -o /dev/null
echo "edgebench-blob $digest $(stat -c %s "$file")"
