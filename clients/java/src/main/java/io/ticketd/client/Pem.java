package io.ticketd.client;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.security.spec.PKCS8EncodedKeySpec;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;

/**
 * Builds an SSLContext from PEM files with the JDK alone. Certificates: X.509 PEM
 * ({@code BEGIN CERTIFICATE}, several per file allowed). Private keys: unencrypted PKCS#8 only
 * ({@code BEGIN PRIVATE KEY}: what {@code openssl genpkey} and ticketd's own {@code pki} write) of
 * RSA, EC or Ed25519; PKCS#1 ({@code BEGIN RSA PRIVATE KEY}), SEC1 ({@code BEGIN EC PRIVATE KEY}) and
 * encrypted keys are refused with a message saying how to convert them
 * ({@code openssl pkcs8 -topk8 -nocrypt}).
 */
final class Pem {
    private static final Pattern BLOCK =
        Pattern.compile("-----BEGIN ([A-Z0-9 ]+)-----([A-Za-z0-9+/=\\s]*?)-----END \\1-----");

    private Pem() {}

    static List<Certificate> certificates(Path file) throws IOException, GeneralSecurityException {
        CertificateFactory cf = CertificateFactory.getInstance("X.509");
        List<Certificate> out = new ArrayList<>();
        for (String[] b : blocks(file)) {
            if (b[0].equals("CERTIFICATE")) out.add(cf.generateCertificate(new ByteArrayInputStream(decode(b[1]))));
        }
        if (out.isEmpty()) throw new GeneralSecurityException(file + ": no PEM CERTIFICATE block");
        return out;
    }

    static PrivateKey privateKey(Path file) throws IOException, GeneralSecurityException {
        for (String[] b : blocks(file)) {
            switch (b[0]) {
                case "PRIVATE KEY": {
                    PKCS8EncodedKeySpec spec = new PKCS8EncodedKeySpec(decode(b[1]));
                    GeneralSecurityException last = null;
                    for (String alg : new String[] {"RSA", "EC", "Ed25519"}) {
                        try {
                            return KeyFactory.getInstance(alg).generatePrivate(spec);
                        } catch (GeneralSecurityException e) {
                            last = e;
                        }
                    }
                    throw new GeneralSecurityException(file + ": a PKCS#8 key that is not RSA, EC or Ed25519", last);
                }
                case "RSA PRIVATE KEY":
                case "EC PRIVATE KEY":
                case "ENCRYPTED PRIVATE KEY":
                    throw new GeneralSecurityException(file + ": " + b[0] + " is not supported; convert it to unencrypted PKCS#8 "
                        + "with: openssl pkcs8 -topk8 -nocrypt -in key.pem -out key-pkcs8.pem");
                default:
            }
        }
        throw new GeneralSecurityException(file + ": no PEM PRIVATE KEY block");
    }

    /** An SSLContext trusting the CA file (or the JDK's roots when null), with a client certificate when given. */
    static SSLContext context(Path caFile, Path certFile, Path keyFile) throws IOException, GeneralSecurityException {
        TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        if (caFile != null) {
            KeyStore trust = KeyStore.getInstance("PKCS12");
            trust.load(null, null);
            int n = 0;
            for (Certificate c : certificates(caFile)) trust.setCertificateEntry("ca" + n++, c);
            tmf.init(trust);
        } else {
            tmf.init((KeyStore) null);
        }
        KeyManagerFactory kmf = null;
        if (certFile != null) {
            KeyStore ks = KeyStore.getInstance("PKCS12");
            ks.load(null, null);
            char[] pw = new char[0];
            ks.setKeyEntry("client", privateKey(keyFile), pw, certificates(certFile).toArray(new Certificate[0]));
            kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
            kmf.init(ks, pw);
        }
        SSLContext ctx = SSLContext.getInstance("TLS");
        ctx.init(kmf == null ? null : kmf.getKeyManagers(), tmf.getTrustManagers(), null);
        return ctx;
    }

    private static List<String[]> blocks(Path file) throws IOException {
        String text = Files.readString(file, StandardCharsets.US_ASCII);
        List<String[]> out = new ArrayList<>();
        Matcher m = BLOCK.matcher(text);
        while (m.find()) out.add(new String[] {m.group(1), m.group(2)});
        return out;
    }

    private static byte[] decode(String b64) {
        return Base64.getMimeDecoder().decode(b64);
    }
}
