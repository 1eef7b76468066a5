package testenv

import (
	"context"
	"fmt"
	"os"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"
)

// UserWithClusterRole returns a client configuration for a new user that
// holds only the ClusterRole in roleFile (a generated role.yaml), bound under
// the user's own name. Tests that run controllers as that user also check
// that the generated RBAC covers what the controllers do.
func (e *Env) UserWithClusterRole(ctx context.Context, user, roleFile string) (*rest.Config, error) {
	raw, err := os.ReadFile(roleFile)
	if err != nil {
		return nil, err
	}
	role := &rbacv1.ClusterRole{}
	if err := yaml.Unmarshal(raw, role); err != nil {
		return nil, fmt.Errorf("parse %s: %w", roleFile, err)
	}
	role.Name = user
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: user},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	for _, o := range []client.Object{role, binding} {
		if err := e.Client.Create(ctx, o); err != nil {
			return nil, fmt.Errorf("create %T: %w", o, err)
		}
	}
	u, err := e.Environment.ControlPlane.AddUser(envtest.User{Name: user}, e.Config)
	if err != nil {
		return nil, fmt.Errorf("add user %s: %w", user, err)
	}
	return u.Config(), nil
}
