#!/usr/bin/perl
# A hostile sandbox-supervisor for tst_channel: it speaks the frame protocol
# (engine/supervisor/PROTOCOL.md) well enough for a sandbox to start and run commands, and turns
# hostile when a command asks it to, as code that took the supervisor over would:
#   FORGE_HELLO   sends a second HELLO before answering
#   FORGE_OUTPUT  sends 4 MiB of STDOUT and claims truncated:false
#   OVERSIZED     sends a STDOUT header that claims 256 MiB
#   UNKNOWN_ID    answers a request id that was never asked
#   HANG          never answers (nor anything after)
#   DIE           exits in the middle of the request
# and every `watch` reports a change outside the folder it watches.
# Anything else answers exit 0 with "fake:<command>" on stdout. It uses the channel at fd 3 when
# there is one (protocol 2), else stdin/stdout (the engine before it).
use strict;
use warnings;
use JSON::PP;

my ($in, $out);
if (open(my $channel, '+<&=', 3)) {
    ($in, $out) = ($channel, $channel);
} else {
    open($in, '<&=', 0) or exit 2;
    open($out, '>&=', 1) or exit 2;
}
binmode $in;
binmode $out;

sub send_frame {
    my ($type, $id, $payload) = @_;
    my $frame = pack('VCV', length($payload) + 5, $type, $id) . $payload;
    while (length $frame) {
        my $n = syswrite($out, $frame);
        exit 0 unless defined $n && $n > 0;
        substr($frame, 0, $n) = '';
    }
}

sub read_exact {
    my ($n) = @_;
    my $buf = '';
    while (length($buf) < $n) {
        my $r = sysread($in, $buf, $n - length($buf), length($buf));
        exit 0 unless $r;
    }
    return $buf;
}

my $json = JSON::PP->new->canonical;
sub answer { my ($id, $obj) = @_; send_frame(16, $id, $json->encode($obj)); }

send_frame(32, 0, $json->encode({ pid => $$, version => '2' }));
my $hung = 0;
while (1) {
    my ($length, $type, $id) = unpack('VCV', read_exact(9));
    my $payload = $length > 5 ? read_exact($length - 5) : '';
    next if $hung || $type != 1;
    my $text = $payload;
    $text =~ s/\0.*//s;
    my $req = eval { $json->decode($text) } || {};
    my $op = $req->{op} // '';
    if ($op eq 'exec') {
        my $cmd = defined $req->{shell} ? $req->{shell} : join(' ', @{ $req->{argv} || [] });
        my $done = { exitCode => 0, signal => undef, durationMs => 1, timedOut => JSON::PP::false,
                     cancelled => JSON::PP::false, truncated => JSON::PP::false };
        if ($cmd =~ /HANG/) { $hung = 1; next; }
        if ($cmd =~ /DIE/) { exit 3; }
        if ($cmd =~ /FORGE_HELLO/) {
            send_frame(32, 0, $json->encode({ pid => $$, version => '2' }));
        } elsif ($cmd =~ /FORGE_OUTPUT/) {
            send_frame(17, $id, 'x' x 65536) for 1 .. 64;
        } elsif ($cmd =~ /OVERSIZED/) {
            syswrite($out, pack('VCV', 256 * 1024 * 1024 + 5, 17, $id) . ('y' x 65536));
        } elsif ($cmd =~ /UNKNOWN_ID/) {
            answer($id + 1000, $done);
        } else {
            send_frame(17, $id, "fake:$cmd");
        }
        answer($id, $done);
    } elsif ($op eq 'watch') {
        # Set up as asked, then a change outside the watched folder.
        send_frame(19, $id, $json->encode({ ready => JSON::PP::true, path => $req->{path},
                                             recursive => JSON::PP::true, dirs => 1,
                                             truncated => JSON::PP::false }));
        send_frame(19, $id, $json->encode({ events => [ { type => 'create', path => '/etc/shadow',
                                                          isDir => JSON::PP::false } ] }));
    } elsif ($op eq 'ping') {
        answer($id, { pid => $$, uptimeMs => 1, execs => 0 });
    } elsif ($op eq 'readFile' || $op eq 'stat') {
        answer($id, { error => { code => 'not_found', message => 'no such file', errno => 'ENOENT' } });
    } elsif ($op eq 'list') {
        answer($id, { path => $req->{path} // '/workspace', entries => [], truncated => JSON::PP::false });
    } elsif ($op eq 'writeFile') {
        answer($id, { path => $req->{path} // '', size => 0 });
    } elsif ($op eq 'mkdir' || $op eq 'delete') {
        answer($id, { path => $req->{path} // '' });
    } else {
        answer($id, {});
    }
}
