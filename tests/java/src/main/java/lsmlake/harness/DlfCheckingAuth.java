package lsmlake.harness;

import org.apache.paimon.rest.auth.AuthProvider;
import org.apache.paimon.rest.auth.DLFAuthProvider;
import org.apache.paimon.rest.auth.DLFDefaultSigner;
import org.apache.paimon.rest.auth.DLFToken;
import org.apache.paimon.rest.auth.RESTAuthParameter;

import java.time.Instant;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.Collections;
import java.util.Map;

/**
 * The REST server's check of DLF-signed requests: Java Paimon's own DLFDefaultSigner recomputes the
 * signed headers and the Authorization header of each request from its method, path, query, body and
 * the x-dlf-date the client sent (DLFAuthProvider would use the server's clock, which differs from the
 * client's by up to a second). The server answers 401 unless the client's Authorization header equals
 * it; a signed header the client sent with another value than the signer's gives a value that cannot
 * match.
 */
final class DlfCheckingAuth implements AuthProvider {

    private final DLFDefaultSigner signer;
    private final DLFToken token;

    DlfCheckingAuth(String accessKeyId, String accessKeySecret, String securityToken, String region) {
        this.signer = new DLFDefaultSigner(region);
        this.token = new DLFToken(accessKeyId, accessKeySecret, securityToken, null);
    }

    @Override
    public Map<String, String> mergeAuthHeader(
            Map<String, String> headers, RESTAuthParameter request) {
        String date = headers.get(DLFAuthProvider.DLF_DATE_HEADER_KEY.toLowerCase());
        if (date == null) {
            return Collections.singletonMap("Authorization", "no x-dlf-date header");
        }
        try {
            Instant when =
                    LocalDateTime.parse(date, DLFAuthProvider.AUTH_DATE_TIME_FORMATTER)
                            .toInstant(ZoneOffset.UTC);
            Map<String, String> signed =
                    signer.signHeaders(request.data(), when, token.getSecurityToken(), "");
            for (Map.Entry<String, String> e : signed.entrySet()) {
                String sent = headers.get(e.getKey().toLowerCase());
                if (!e.getValue().equals(sent == null ? null : sent.trim())) {
                    return Collections.singletonMap(
                            "Authorization", "signed header " + e.getKey() + " differs");
                }
            }
            return Collections.singletonMap(
                    "Authorization", signer.authorization(request, token, "", signed));
        } catch (Exception e) {
            return Collections.singletonMap("Authorization", "cannot check: " + e);
        }
    }
}
