# shellcheck shell=sh
# $1 folder, $2 subjectAltName. A self-signed certificate valid from a day ago: a device's clock
# may lag the host's (the emulated debian-v2 ran 4 minutes behind under TCG; a Raspberry Pi has
# no real-time clock and may not have synchronised yet), and one valid only from the host's "now"
# is not yet valid there, so the pull fails verification. `openssl req -x509` cannot backdate
# before OpenSSL 3.4, `openssl ca -selfsign -startdate` can.
# Sent by edgebench.runtimes.image_registry (_CERTIFICATE) as the text of one `sh -c`.
set -e
d=$1; san=$2; ca=$d/ca
mkdir -p "$ca/new"; : > "$ca/index.txt"; echo 01 > "$ca/serial"
printf '%s\n' "[ca]" "default_ca = edgebench" "[edgebench]" "database = $ca/index.txt" "new_certs_dir = $ca/new" \
  "serial = $ca/serial" "default_md = sha256" "policy = anything" "unique_subject = no" \
  "[anything]" "commonName = supplied" "[registry]" "subjectAltName = $san" \
  "basicConstraints = critical,CA:TRUE" "subjectKeyIdentifier = hash" > "$ca/openssl.cnf"
openssl req -new -newkey rsa:2048 -nodes -keyout "$d/key.pem" -subj "/CN=edgebench registry" -out "$ca/req.pem" 2>&1
openssl ca -batch -selfsign -notext -config "$ca/openssl.cnf" -extensions registry -keyfile "$d/key.pem" \
  -in "$ca/req.pem" -out "$d/cert.pem" -startdate "$(date -u -d '1 day ago' +%y%m%d%H%M%SZ)" \
  -enddate "$(date -u -d '2 days' +%y%m%d%H%M%SZ)" 2>&1
